/* Durations on the command line: whole seconds, written "30", "30s",
 * "2m", "1h" or combined ("1m30s"). */
#ifndef DURATION_H
#define DURATION_H

/* Parses s into *out seconds, 1 to max_s. Returns 0, -EINVAL (not a
 * duration) or -ERANGE (zero, or more than max_s); *out is untouched then. */
int duration_parse(const char *s, long max_s, long *out);

/* "90" -> "1m30s"; "600" -> "10m"; at most len bytes (16 are enough). */
void duration_format(long secs, char *buf, unsigned long len);

#endif /* DURATION_H */
