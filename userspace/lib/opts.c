// SPDX-License-Identifier: Apache-2.0
/* Table-driven options (see opts.h): the rows become getopt_long's option
 * array, each value is parsed by its type, and --help's option lines are
 * printed from the same rows. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/opts.h"
#include "lib/duration.h"
#include "lib/log.h"

#define HELP_COL 25 /* where the help text starts */
#define MAX_OPTS 96

struct row {
	const struct opt *o;
	void *dst;
};

static int
collect(const struct opt_set *sets, int nsets, struct row *rows, int max)
{
	int n = 0;

	for (int s = 0; s < nsets; s++)
		for (const struct opt *o = sets[s].opts; o->name; o++) {
			if (n == max)
				return -1;
			rows[n].o = o;
			rows[n].dst = sets[s].dst;
			n++;
		}
	return n;
}

static int
parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* One option's value into its place. */
static int
set_value(const struct row *r, const char *arg, char *err, size_t errlen)
{
	const struct opt *o = r->o;
	void *at = o->var ? o->var : (char *)r->dst + o->off;
	long v;

	switch (o->type) {
	case OPT_T_FLAG:
		*(bool *)at = true;
		return 0;
	case OPT_T_COUNT:
		*(int *)at += 1;
		return 0;
	case OPT_T_STR:
		*(const char **)at = arg;
		return 0;
	case OPT_T_INT:
		if (parse_long(arg, o->min, o->max, &v)) {
			snprintf(err, errlen, "expected a number from %ld to %ld", o->min, o->max);
			return -EINVAL;
		}
		*(int *)at = (int)v;
		return 0;
	case OPT_T_SECS:
		if (duration_parse_secs(arg, o->min, o->max, &v, err, errlen))
			return -EINVAL;
		*(int *)at = (int)v;
		return 0;
	case OPT_T_NSEC:
		return duration_parse(arg, (uint64_t *)at, err, errlen) ? -EINVAL : 0;
	case OPT_T_PORT:
		if (parse_long(arg, 1, 65535, &v)) {
			snprintf(err, errlen, "expected a port from 1 to 65535");
			return -EINVAL;
		}
		*(uint16_t *)at = (uint16_t)v;
		return 0;
	case OPT_T_CALL:
		return o->call(r->dst, o, arg, err, errlen);
	case OPT_T_HELP:
		break;
	}
	return 0;
}

int
opts_parse(const char *cmd, const struct opt_set *sets, int nsets, int argc, char **argv,
	   bool stop_at_arg, int *first)
{
	struct option longopts[MAX_OPTS + 1];
	struct row rows[MAX_OPTS];
	char shorts[2 * MAX_OPTS + 4], err[300];
	int n, ns = 0, c, idx;

	n = collect(sets, nsets, rows, MAX_OPTS);
	if (n < 0) {
		log_warnx("%s: too many options (a bug)", cmd);
		return OPTS_USAGE;
	}
	if (stop_at_arg)
		shorts[ns++] = '+'; /* CMD's own options are CMD's */
	shorts[ns++] = ':';	    /* ':' for a missing argument */
	for (int i = 0; i < n; i++) {
		longopts[i].name = rows[i].o->name;
		longopts[i].has_arg = rows[i].o->arg ? required_argument : no_argument;
		longopts[i].flag = NULL;
		longopts[i].val = 256 + i;
		if (rows[i].o->short_name) {
			shorts[ns++] = (char)rows[i].o->short_name;
			if (rows[i].o->arg)
				shorts[ns++] = ':';
		}
	}
	memset(&longopts[n], 0, sizeof(longopts[n]));
	shorts[ns] = 0;

	opterr = 0;
	/* 0, not 1: glibc's getopt starts afresh; with 1 it may go on inside
	 * the last parse's argv (the daemon parses every user socket request) */
	optind = 0;
	while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		if (c == ':') {
			log_warnx("%s: option %s needs an argument (see egressctl %s --help)", cmd,
				  argv[optind - 1], cmd);
			return OPTS_USAGE;
		}
		idx = -1;
		if (c >= 256 && c < 256 + n) {
			idx = c - 256;
		} else {
			for (int i = 0; i < n; i++)
				if (rows[i].o->short_name == c)
					idx = i;
		}
		if (idx < 0) { /* '?' */
			char bad[3] = {'-', (char)optopt, 0};

			log_warnx("%s: unknown option %s (see egressctl %s --help)", cmd,
				  optopt > 0 && optopt < 256 ? bad : argv[optind - 1], cmd);
			return OPTS_USAGE;
		}
		if (rows[idx].o->type == OPT_T_HELP)
			return OPTS_HELP;
		err[0] = 0;
		if (set_value(&rows[idx], optarg, err, sizeof(err))) {
			if (rows[idx].o->type == OPT_T_SECS || rows[idx].o->type == OPT_T_NSEC)
				/* the duration parser's words start with the value */
				log_warnx("%s: --%s %s", cmd, rows[idx].o->name, err);
			else if (rows[idx].o->arg && !(rows[idx].o->flags & OPT_F_NOECHO))
				log_warnx("%s: --%s %s: %s", cmd, rows[idx].o->name, optarg, err);
			else
				log_warnx("%s: --%s: %s", cmd, rows[idx].o->name, err);
			return OPTS_USAGE;
		}
	}
	*first = optind;
	return OPTS_OK;
}

void
opts_help(FILE *f, const struct opt_set *sets, int nsets)
{
	struct row rows[MAX_OPTS];
	int n = collect(sets, nsets, rows, MAX_OPTS);

	for (int i = 0; i < n; i++) {
		const struct opt *o = rows[i].o;
		const char *h = o->help ? o->help : "";
		int w;

		if (o->flags & OPT_F_HIDDEN)
			continue;
		if (o->short_name)
			w = fprintf(f, "  -%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "",
				    o->arg ? o->arg : "");
		else
			w = fprintf(f, "  --%s%s%s", o->name, o->arg ? " " : "",
				    o->arg ? o->arg : "");
		fprintf(f, "%*s", w < HELP_COL ? HELP_COL - w : 2, "");
		for (;;) {
			size_t len = strcspn(h, "\n");

			fprintf(f, "%.*s\n", (int)len, h);
			if (!h[len])
				break;
			h += len + 1;
			fprintf(f, "%*s", HELP_COL, "");
		}
	}
}

/* The row called name ('_' and '-' alike); -1 if none. */
static int
find_row(const struct row *rows, int n, const char *name)
{
	for (int i = 0; i < n; i++) {
		const char *a = rows[i].o->name, *b = name;

		while (*a && (*a == *b || (*a == '-' && *b == '_')))
			a++, b++;
		if (!*a && !*b && rows[i].o->type != OPT_T_HELP)
			return i;
	}
	return -1;
}

int
opts_set(const struct opt_set *sets, int nsets, const char *name, const char *arg, char *err,
	 size_t errlen)
{
	struct row rows[MAX_OPTS];
	int n = collect(sets, nsets, rows, MAX_OPTS), i;

	i = n < 0 ? -1 : find_row(rows, n, name);
	if (i < 0 || (rows[i].o->flags & OPT_F_HIDDEN)) {
		snprintf(err, errlen, "unknown key");
		return -ENOENT;
	}
	if (!rows[i].o->arg != !arg) {
		snprintf(err, errlen, rows[i].o->arg ? "expected a value" : "takes no value");
		return -EINVAL;
	}
	err[0] = 0;
	return set_value(&rows[i], arg, err, errlen) ? -EINVAL : 0;
}

int
opts_takes_arg(const struct opt_set *sets, int nsets, const char *name)
{
	struct row rows[MAX_OPTS];
	int n = collect(sets, nsets, rows, MAX_OPTS), i;

	i = n < 0 ? -1 : find_row(rows, n, name);
	if (i < 0 || (rows[i].o->flags & OPT_F_HIDDEN))
		return -ENOENT;
	return rows[i].o->arg != NULL;
}
