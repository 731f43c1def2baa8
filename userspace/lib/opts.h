// SPDX-License-Identifier: Apache-2.0
/* Command-line options as tables: one row per option gives its name, what
 * it takes, where its value goes and its help text. The parser (getopt_long
 * underneath) and the option lines of --help come from the same rows, so
 * they cannot disagree, and a command's options can be shared with another
 * (run and daemon share the policy, log, timeout and limit rows). */
#ifndef OPTS_H
#define OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Exit status of a usage error (bad option, missing argument, unknown
 * command), distinct from EGR_EXIT_ERROR (125, a runtime failure). */
#define EGR_EXIT_USAGE 2

enum opt_type {
	OPT_T_FLAG = 0, /* bool = true */
	OPT_T_COUNT,	/* int += 1 (-v -v) */
	OPT_T_STR,	/* const char * = the argument */
	OPT_T_INT,	/* int from min to max */
	OPT_T_SECS,	/* int: whole seconds from min to max (duration syntax) */
	OPT_T_NSEC,	/* uint64_t: nanoseconds (duration syntax; 0 = off) */
	OPT_T_PORT,	/* uint16_t from 1 to 65535 */
	OPT_T_CALL,	/* call(): anything else (rules, lists) */
	OPT_T_HELP,	/* -h/--help: print the usage on stdout, exit 0 */
};

struct opt;

/* Returns 0, or -EINVAL with a message (without the "--name ARG: "
 * prefix) in err. */
typedef int (*opt_call)(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen);

#define OPT_F_HIDDEN 0x01 /* parsed, not listed in --help (test options) */
#define OPT_F_NOECHO 0x02 /* its argument is never repeated in a message (it may hold a secret) */

struct opt {
	const char *name; /* long name, without "--" */
	int short_name;	  /* 'v', or 0 */
	enum opt_type type;
	size_t off;	    /* where the value goes, from the set's dst */
	const char *arg;    /* the argument in help ("FILE", "D"); NULL: takes none */
	const char *help;   /* lines separated by '\n', without indentation */
	long min, max;	    /* OPT_T_INT, OPT_T_SECS */
	opt_call call;	    /* OPT_T_CALL */
	unsigned int flags; /* OPT_F_* */
	void *var;	    /* a global instead of dst + off (-v: log_verbose) */
};

/* A table (ended by a row with a NULL name) and the struct its offsets
 * point into. */
struct opt_set {
	const struct opt *opts;
	void *dst;
};

enum {
	OPTS_OK = 0,	 /* parsed; *first is the first argument that is not an option */
	OPTS_HELP = 1,	 /* --help was given (nothing printed yet) */
	OPTS_USAGE = -1, /* a usage error, said on stderr as "CMD: ..." */
};

/* Parses argv[1..] (argv[0] is the command's name) against the sets, in
 * order. With stop_at_arg, parsing stops at the first argument that is not
 * an option (run's CMD); else options and arguments may mix and arguments
 * are moved to the end (getopt's permutation). "--" ends the options. */
int opts_parse(const char *cmd, const struct opt_set *sets, int nsets, int argc, char **argv,
	       bool stop_at_arg, int *first);

/* Sets the option called name (its long name, or with '_' for '-') as
 * if "--name arg" had been given; arg is NULL for an option that takes
 * none. For configuration files that use the options' names as keys.
 * Returns 0, -ENOENT (no such option; err says so) or -EINVAL (err says
 * why). */
int opts_set(const struct opt_set *sets, int nsets, const char *name, const char *arg, char *err,
	     size_t errlen);

/* Whether the option called name takes an argument; -ENOENT if there is
 * none such. */
int opts_takes_arg(const struct opt_set *sets, int nsets, const char *name);

/* The option lines of --help: "  --name ARG   help", help continued on
 * the following lines, aligned. */
void opts_help(FILE *f, const struct opt_set *sets, int nsets);

#endif /* OPTS_H */
