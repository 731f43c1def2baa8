// SPDX-License-Identifier: Apache-2.0
/* The daemon's configuration file (daemon/dconfig.c): every key is one of
 * run's options or the target's kind and name; errors name their place;
 * the example shipped in contrib/ loads. And the option tables it rides
 * on (lib/opts.c): opts_set, durations, flags. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "table.h"
#include "daemon/dconfig.h"
#include "daemon/oci.h"

struct cfg_case {
	const char *name;
	const char *json;
	const char *err; /* a substring of the error; NULL: loads */
	int n;		 /* targets when it loads */
};

static const struct cfg_case cfg_cases[] = {
	{"one-cgroup", "{\"targets\":[{\"cgroup\":\"/sys/fs/cgroup/x\",\"allow\":[\"a.test\"]}]}",
	 NULL, 1},
	{"unit-and-pid",
	 "{\"targets\":[{\"unit\":\"r.service\"},{\"pid\":42,\"name\":\"p\"}],\"control\":\"/run/"
	 "x\"}",
	 NULL, 2},
	{"options-as-keys",
	 "{\"targets\":[{\"cgroup\":\"a\",\"max_conns\":100,\"head-timeout\":\"30s\","
	 "\"idle_timeout\":60,\"audit\":true,\"allow_abstract_unix\":false,\"deny\":\"b.test\","
	 "\"kill_existing\":true}]}",
	 NULL, 1},
	{"not-an-object", "[1]", "not a JSON object", 0},
	{"data-after", "{\"targets\":[{\"cgroup\":\"a\"}]} x", "not a JSON object", 0},
	{"syntax-error", "{\"targets\":[{\"cgroup\":\"a\",}]}",
	 "JSON syntax error at line 1, column 27 (byte offset 26): string or '}' expected near '}'",
	 0},
	/* a key twice was the first (the kind) or both (rules) before: now
	 * refused, with its path */
	{"duplicate-key", "{\"targets\":[{\"cgroup\":\"a\",\"allow\":[\"a.test\"],\"allow\":[]}]}",
	 "targets[0]: duplicate key \"allow\" at line 1", 0},
	{"no-targets", "{}", "targets: expected a list", 0},
	{"empty-targets", "{\"targets\":[]}", "targets: expected a list", 0},
	{"unknown-top", "{\"targets\":[{\"cgroup\":\"a\"}],\"bogus\":1}", "bogus: unknown key", 0},
	{"relative-control", "{\"targets\":[{\"cgroup\":\"a\"}],\"control\":\"x\"}",
	 "control: expected an absolute path", 0},
	{"unknown-key", "{\"targets\":[{\"cgroup\":\"a\",\"max_con\":1}]}",
	 "targets[0].max_con: unknown key", 0},
	{"two-kinds", "{\"targets\":[{\"cgroup\":\"a\",\"unit\":\"b\"}]}",
	 "targets[0]: name exactly one of", 0},
	{"no-kind", "{\"targets\":[{\"allow\":[\"a.test\"]}]}", "targets[0]: name exactly one of",
	 0},
	{"bad-pid", "{\"targets\":[{\"pid\":\"x\"}]}", "targets[0].pid: expected a process id", 0},
	/* a "unit" with a glob is a selector of units in a slice */
	{"unit-pattern",
	 "{\"targets\":[{\"unit\":\"ci-*.service\",\"allow\":[\"a.test\"]}],\"default\":\"deny\"}",
	 NULL, 1},
	{"unit-pattern-needs-default", "{\"targets\":[{\"unit\":\"ci-*.service\"}]}",
	 "default: required with selectors", 0},
	{"unit-pattern-no-type", "{\"targets\":[{\"unit\":\"ci-*\"}],\"default\":\"deny\"}",
	 "targets[0].unit: ci-*: a pattern of unit names, ending in .service, .scope or .slice", 0},
	{"unit-pattern-glob-type", "{\"targets\":[{\"unit\":\"ci.serv*\"}],\"default\":\"deny\"}",
	 "a pattern of unit names", 0},
	{"unit-pattern-path",
	 "{\"targets\":[{\"unit\":\"a.slice/ci-*.service\"}],\"default\":\"deny\"}",
	 "a pattern of unit names", 0},
	{"unit-slice-not-slice",
	 "{\"targets\":[{\"unit\":\"ci-*.service\",\"slice\":\"ci.service\"}],\"default\":"
	 "\"deny\"}",
	 "targets[0].slice: expected the name of a slice", 0},
	{"unit-slice-path",
	 "{\"targets\":[{\"unit\":\"ci-*.service\",\"slice\":\"/a.slice\"}],\"default\":"
	 "\"deny\"}",
	 "targets[0].slice: expected the name of a slice", 0},
	{"unit-slice-glob",
	 "{\"targets\":[{\"unit\":\"ci-*.service\",\"slice\":\"c*.slice\"}],\"default\":"
	 "\"deny\"}",
	 "targets[0].slice: expected the name of a slice", 0},
	{"unit-slice-dashes",
	 "{\"targets\":[{\"unit\":\"ci-*.service\",\"slice\":\"a--b.slice\"}],\"default\":"
	 "\"deny\"}",
	 "targets[0].slice: expected the name of a slice", 0},
	{"slice-without-pattern", "{\"targets\":[{\"unit\":\"r.service\",\"slice\":\"a.slice\"}]}",
	 "targets[0].slice: only with a pattern of units", 0},
	{"slice-on-cgroup", "{\"targets\":[{\"cgroup\":\"a\",\"slice\":\"a.slice\"}]}",
	 "targets[0].slice: only with a pattern of units", 0},
	{"bad-rule-place",
	 "{\"targets\":[{\"cgroup\":\"a\"},{\"cgroup\":\"b\",\"allow\":[\"a.test\",\"b.test\","
	 "\"c.test\",\"*\"]}]}",
	 "targets[1].allow[3]: ", 0},
	{"rule-not-string", "{\"targets\":[{\"cgroup\":\"a\",\"allow\":[1]}]}",
	 "targets[0].allow[0]: expected a string", 0},
	{"bad-number", "{\"targets\":[{\"cgroup\":\"a\",\"max_conns\":0}]}",
	 "targets[0].max_conns: expected a number from 1", 0},
	{"fraction", "{\"targets\":[{\"cgroup\":\"a\",\"max_conns\":1.5}]}",
	 "targets[0].max_conns: expected a string or a whole number", 0},
	{"bad-duration", "{\"targets\":[{\"cgroup\":\"a\",\"head_timeout\":\"1.5s\"}]}",
	 "targets[0].head_timeout: 1.5s: whole seconds only", 0},
	{"flag-not-bool", "{\"targets\":[{\"cgroup\":\"a\",\"audit\":\"yes\"}]}",
	 "targets[0].audit: expected true or false", 0},
	{"containers", "{\"targets\":[{\"cgroup\":\"a\",\"containers\":\"172.17.0.1\"}]}", NULL, 1},
	{"containers-loopback", "{\"targets\":[{\"cgroup\":\"a\",\"containers\":\"127.0.0.1\"}]}",
	 "targets[0].containers: 127.0.0.1 cannot be", 0},
	{"containers-not-ipv4", "{\"targets\":[{\"cgroup\":\"a\",\"containers\":\"fd00::1\"}]}",
	 "targets[0].containers: expected an IPv4 address", 0},
	{"containers-not-string", "{\"targets\":[{\"cgroup\":\"a\",\"containers\":true}]}",
	 "targets[0].containers: expected an IPv4 address", 0},
	{"upstream-proxy",
	 "{\"targets\":[{\"cgroup\":\"a\",\"upstream-proxy\":\"http://proxy.test:3128\","
	 "\"upstream_proxy_auth\":\"/etc/egressctl/upstream.auth\","
	 "\"upstream-no-proxy\":\"corp.test,10.0.0.0/8\"}]}",
	 NULL, 1},
	{"upstream-proxy-https",
	 "{\"targets\":[{\"cgroup\":\"a\",\"upstream-proxy\":\"https://p:1\"}]}",
	 "targets[0].upstream-proxy: https:// to the upstream proxy is not supported", 0},
	{"upstream-proxy-userinfo",
	 "{\"targets\":[{\"cgroup\":\"a\",\"upstream-proxy\":\"http://u:s3cr3t@p:1\"}]}",
	 "targets[0].upstream-proxy: credentials do not go in the URL", 0},
	{"upstream-no-proxy-bad",
	 "{\"targets\":[{\"cgroup\":\"a\",\"upstream-proxy\":\"http://p:1\","
	 "\"upstream-no-proxy\":\"*\"}]}",
	 "targets[0].upstream-no-proxy: '*': it would send everything direct", 0},
	{"upstream-no-proxy-alone",
	 "{\"targets\":[{\"cgroup\":\"a\",\"upstream-no-proxy\":\"corp.test\"}]}",
	 "--upstream-no-proxy needs --upstream-proxy", 0},
	{"policy-dir-relative", "{\"policy_dir\":\"p\",\"targets\":[{\"cgroup\":\"a\"}]}",
	 "policy_dir: expected an absolute path", 0},
	{"policy-dir-bad-name",
	 "{\"policy_dir\":\"/p\",\"targets\":[{\"cgroup\":\"a\",\"policy\":\"..data\"}]}",
	 "targets[0].policy: ..data: a policy's name is", 0},
	{"policy-dir-empty-name",
	 "{\"policy_dir\":\"/p\",\"targets\":[{\"cgroup\":\"a\",\"policy\":\".json\"}]}",
	 "targets[0].policy: .json: a policy's name is", 0},
	{"selector",
	 "{\"default\":\"deny\",\"targets\":[{\"cgroup\":\"/k/**\"},{\"cgroup\":\"a\"}]}", NULL, 2},
	{"selector-no-default", "{\"targets\":[{\"cgroup\":\"/k/*\"}]}",
	 "default: required with selectors", 0},
	{"default-no-selector", "{\"default\":\"deny\",\"targets\":[{\"cgroup\":\"a\"}]}",
	 "default: only with selectors", 0},
	{"default-bad", "{\"default\":\"allow\",\"targets\":[{\"cgroup\":\"/k/*\"}]}",
	 "default: expected \"deny\" or \"unconfined\"", 0},
	{"selector-relative", "{\"default\":\"deny\",\"targets\":[{\"cgroup\":\"k/*\"}]}",
	 "targets[0].cgroup: k/*: a selector is a glob of absolute paths", 0},
	{"containers-env-missing",
	 "{\"targets\":[{\"cgroup\":\"a\",\"containers\":\"env:EGR_TEST_NO_SUCH_VAR\"}]}",
	 "targets[0].containers: env:EGR_TEST_NO_SUCH_VAR: the environment has no "
	 "EGR_TEST_NO_SUCH_VAR",
	 0},
	{"annotations",
	 "{\"default\":\"deny\",\"oci_bundles\":[\"/run/b/{id}\"],\"targets\":[{\"cgroup\":"
	 "\"/k/*\",\"annotations\":{\"io.kubernetes.pod.name\":\"job-*\"}}]}",
	 NULL, 1},
	{"annotations-no-selector",
	 "{\"targets\":[{\"cgroup\":\"/k\",\"annotations\":{\"a\":\"b\"}}]}",
	 "targets[0].annotations: only with a selector", 0},
	{"annotations-not-glob",
	 "{\"default\":\"deny\",\"targets\":[{\"cgroup\":\"/k/*\",\"annotations\":{\"a\":1}}]}",
	 "targets[0].annotations.a: expected a glob", 0},
	{"labels",
	 "{\"default\":\"deny\",\"docker_containers\":[\"/d/containers/{id}\"],"
	 "\"targets\":[{\"cgroup\":\"/docker/*\",\"labels\":{\"ci.job\":\"build-*\"}}]}",
	 NULL, 1},
	{"labels-no-selector", "{\"targets\":[{\"cgroup\":\"/k\",\"labels\":{\"a\":\"b\"}}]}",
	 "targets[0].labels: only with a selector", 0},
	{"docker-containers-no-id",
	 "{\"default\":\"deny\",\"docker_containers\":[\"/d\"],\"targets\":[{\"cgroup\":\"/k/"
	 "*\"}]}",
	 "docker_containers[0]: expected an absolute path with {id}", 0},
	{"oci-bundles-no-id",
	 "{\"default\":\"deny\",\"oci_bundles\":[\"/run/b\"],\"targets\":[{\"cgroup\":\"/k/*\"}]}",
	 "oci_bundles[0]: expected an absolute path with {id}", 0},
	{"suggest-policy-is-summary's",
	 "{\"targets\":[{\"cgroup\":\"a\",\"suggest_policy\":\"f\"}]}",
	 "targets[0].suggest_policy: unknown key", 0},
};

static char *
write_tmp(const char *text)
{
	char *path = strdup("/tmp/egr-dconfig-XXXXXX");
	int fd = path ? mkstemp(path) : -1;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void
run_cfg(void **state)
{
	const struct cfg_case *c = *state;
	struct dconfig cfg;
	char errbuf[600] = "", *path = write_tmp(c->json);
	int err = dconfig_load(path, &cfg, errbuf, sizeof(errbuf));

	unlink(path);
	free(path);
	if (!c->err) {
		if (err)
			fail_msg("%s: %s", c->name, errbuf);
		assert_int_equal(cfg.n, c->n);
		dconfig_free(&cfg);
		return;
	}
	assert_int_not_equal(err, 0);
	if (!strstr(errbuf, c->err))
		fail_msg("%s: error \"%s\" lacks \"%s\"", c->name, errbuf, c->err);
}

static void
test_values(void **state)
{
	const char *json =
		"{\"targets\":[{\"cgroup\":\"/x\",\"name\":\"n\",\"max_conns\":100,"
		"\"head_timeout\":\"2m\",\"audit\":true,\"allow\":[\"a.test\",\"b.test\"],"
		"\"deny\":\"c.test\",\"kill_existing\":true,\"log\":\"/l\"}]}";
	char errbuf[600] = "", *path = write_tmp(json);
	struct dconfig cfg;
	const struct dspec *s;

	(void)state;
	assert_int_equal(dconfig_load(path, &cfg, errbuf, sizeof(errbuf)), 0);
	unlink(path);
	free(path);
	s = &cfg.specs[0];
	assert_int_equal(s->kind, DSPEC_CGROUP);
	assert_string_equal(s->what, "/x");
	assert_string_equal(s->name, "n");
	assert_int_equal(s->o.max_conns, 100);
	assert_int_equal(s->o.head_timeout, 120);
	assert_true(s->o.audit);
	assert_true(s->kill_existing);
	assert_string_equal(s->o.log_file, "/l");
	assert_int_equal(s->o.nrules, 3);
	assert_int_equal(s->o.rules[0].action, POLICY_ALLOW);
	assert_string_equal(s->o.rules[1].text, "b.test");
	assert_int_equal(s->o.rules[2].action, POLICY_DENY);
	assert_string_equal(cfg.control, DCONFIG_CONTROL);
	dconfig_free(&cfg);
}

/* A "unit" glob: the glob of the cgroups systemd makes for such units in
 * their slice (system.slice unless "slice" says; a slice's path is its
 * name's dash-separated parents); the pattern kept as written. */
static void
test_unit_selector(void **state)
{
	static const struct {
		const char *slice; /* NULL: no key */
		const char *glob;
	} cases[] = {
		{NULL, "/system.slice/ci-*.service"},
		{"ci.slice", "/ci.slice/ci-*.service"},
		{"a-b-c.slice", "/a.slice/a-b.slice/a-b-c.slice/ci-*.service"},
		{"-.slice", "/ci-*.service"},
		{"user-1000.slice", "/user.slice/user-1000.slice/ci-*.service"},
	};
	char json[300], errbuf[600];
	struct dconfig cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path, slice[64] = "";

		if (cases[i].slice)
			snprintf(slice, sizeof(slice), ",\"slice\":\"%s\"", cases[i].slice);
		snprintf(json, sizeof(json),
			 "{\"targets\":[{\"unit\":\"ci-*.service\"%s,\"labels\":{\"k\":\"v*\"}}],"
			 "\"default\":\"unconfined\"}",
			 slice);
		path = write_tmp(json);
		errbuf[0] = 0;
		if (dconfig_load(path, &cfg, errbuf, sizeof(errbuf)))
			fail_msg("%s: %s", json, errbuf);
		unlink(path);
		free(path);
		assert_true(cfg.specs[0].selector);
		assert_int_equal(cfg.nselectors, 1);
		assert_int_equal(cfg.specs[0].kind, DSPEC_UNIT);
		assert_string_equal(cfg.specs[0].what, cases[i].glob);
		assert_string_equal(cfg.specs[0].unit, "ci-*.service");
		assert_non_null(cfg.specs[0].labels);
		snprintf(json, sizeof(json), "%.*s7.service", (int)(strlen(cases[i].glob) - 9),
			 cases[i].glob);
		assert_int_equal(dsel_match(cfg.specs[0].what, json), DSEL_MATCH);
		json[strlen(json) - 9] = 0; /* "/.../ci-" */
		strcat(json, "7.scope");
		assert_int_equal(dsel_match(cfg.specs[0].what, json), DSEL_NONE);
		dconfig_free(&cfg);
	}
}

/* policy_dir: "policy": NAME is <policy_dir>/NAME.json ("NAME.json" too);
 * a path stays a path; without policy_dir a name is a relative path. */
static void
test_policy_dir(void **state)
{
	const char *json = "{\"policy_dir\":\"/etc/egressctl/policies\",\"targets\":["
			   "{\"cgroup\":\"/a\",\"policy\":\"ci\"},"
			   "{\"cgroup\":\"/b\",\"policy\":\"build.v2.json\"},"
			   "{\"cgroup\":\"/c\",\"policy\":\"/etc/p.json\"}]}";
	char errbuf[600] = "", *path = write_tmp(json);
	struct dconfig cfg;

	(void)state;
	assert_int_equal(dconfig_load(path, &cfg, errbuf, sizeof(errbuf)), 0);
	unlink(path);
	free(path);
	assert_string_equal(cfg.policy_dir, "/etc/egressctl/policies");
	assert_string_equal(cfg.specs[0].policy_name, "ci");
	assert_string_equal(cfg.specs[0].o.policy_file, "/etc/egressctl/policies/ci.json");
	assert_string_equal(cfg.specs[1].policy_name, "build.v2");
	assert_string_equal(cfg.specs[1].o.policy_file, "/etc/egressctl/policies/build.v2.json");
	assert_null(cfg.specs[2].policy_name);
	assert_string_equal(cfg.specs[2].o.policy_file, "/etc/p.json");
	dconfig_free(&cfg);
}

/* Selectors' globs: components by fnmatch, "**" any number of them (one
 * or more at the end); whether a cgroup matches, or one below it may. */
static void
test_dsel_match(void **state)
{
	static const struct {
		const char *glob, *path;
		enum dsel_match want;
	} c[] = {
		{"/k/**", "/k", DSEL_BELOW},
		{"/k/**", "/k/a", DSEL_MATCH},
		{"/k/**", "/k/a/b", DSEL_MATCH},
		{"/k/**", "/j", DSEL_NONE},
		{"/k/*/pod*", "/k", DSEL_BELOW},
		{"/k/*/pod*", "/k/besteffort.slice", DSEL_BELOW},
		{"/k/*/pod*", "/k/besteffort.slice/pod12", DSEL_MATCH},
		{"/k/*/pod*", "/k/besteffort.slice/x", DSEL_NONE},
		{"/k/*/pod*", "/k/a/pod1/c", DSEL_NONE},
		{"/k/**/*.scope", "/k/a/b/c.scope", DSEL_MATCH},
		{"/k/**/*.scope", "/k/c.scope", DSEL_MATCH},
		{"/k/**/*.scope", "/k/a/b", DSEL_BELOW},
		{"/ci/job-[0-9]*", "/ci/job-42", DSEL_MATCH},
		{"/ci/job-[0-9]*", "/ci/job-x", DSEL_NONE},
		{"/ci/*", "/ci/.hidden", DSEL_NONE},
		{"/", "/", DSEL_MATCH},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (dsel_match(c[i].glob, c[i].path) != c[i].want)
			fail_msg("%s against %s: %d, want %d", c[i].glob, c[i].path,
				 dsel_match(c[i].glob, c[i].path), c[i].want);
	assert_string_equal(dsel_rel("/sys/fs/cgroup", "/sys/fs/cgroup/k/*"), "/k/*");
	assert_string_equal(dsel_rel("/sys/fs/cgroup", "/k/*"), "/k/*");
}

/* An OCI bundle's annotations (daemon/oci.c): as the kubelet's runtime
 * writes them; a value with a NUL, or not a string, refused. */
static void
test_oci(void **state)
{
	static const char ok[] = "{\"ociVersion\":\"1.0.2\",\"annotations\":{\"io.kubernetes.cri."
				 "sandbox-namespace\":"
				 "\"ci\",\"io.kubernetes.pod.name\":\"job-1\"}}";
	static const char nul[] = "{\"annotations\":{\"a\":\"b\\u0000c\"}}";
	static const char num[] = "{\"annotations\":{\"a\":1}}";
	struct oci_info in;
	char err[300];

	(void)state;
	assert_int_equal(oci_parse(ok, strlen(ok), &in, err, sizeof(err)), 0);
	assert_int_equal(in.n, 2);
	assert_string_equal(oci_get(&in, "io.kubernetes.pod.name"), "job-1");
	assert_null(oci_get(&in, "io.kubernetes.pod.namespace"));
	oci_free(&in);
	assert_int_not_equal(oci_parse(nul, strlen(nul), &in, err, sizeof(err)), 0);
	assert_true(err[0] != 0); /* jansson refuses \\u0000 before oci.c would */
	assert_int_equal(in.n, 0);
	assert_int_not_equal(oci_parse(num, strlen(num), &in, err, sizeof(err)), 0);
	assert_int_not_equal(oci_parse("{", 1, &in, err, sizeof(err)), 0);
}

/* dockerd's config.v2.json: "Config": {"Labels"}, null when none; the
 * annotations of an OCI file are not labels. */
static void
test_docker_labels(void **state)
{
	static const char ok[] = "{\"ID\":\"abc\",\"Config\":{\"Image\":\"x\",\"Labels\":"
				 "{\"ci.job\":\"build-1\",\"team\":\"web\"}},\"State\":{}}";
	static const char none[] = "{\"Config\":{\"Labels\":null}}";
	static const char bad[] = "{\"Config\":{\"Labels\":[\"a\"]}}";
	static const char badcfg[] = "{\"Config\":\"x\"}";
	static const char oci[] = "{\"annotations\":{\"a\":\"b\"}}";
	struct oci_info in;
	char err[300];

	(void)state;
	assert_int_equal(oci_parse_docker(ok, strlen(ok), &in, err, sizeof(err)), 0);
	assert_int_equal(in.n, 2);
	assert_string_equal(oci_get(&in, "ci.job"), "build-1");
	assert_null(oci_get(&in, "Image"));
	oci_free(&in);
	assert_int_equal(oci_parse_docker(none, strlen(none), &in, err, sizeof(err)), 0);
	assert_int_equal(in.n, 0);
	assert_int_equal(oci_parse_docker(oci, strlen(oci), &in, err, sizeof(err)), 0);
	assert_int_equal(in.n, 0);
	assert_int_not_equal(oci_parse_docker(bad, strlen(bad), &in, err, sizeof(err)), 0);
	assert_string_equal(err, "config.v2.json: labels: not an object");
	assert_int_not_equal(oci_parse_docker(badcfg, strlen(badcfg), &in, err, sizeof(err)), 0);
	assert_string_equal(err, "config.v2.json: Config: not an object");
}

/* Targets compared across a reload: same target, same options but the
 * policy, or not. */
static void
test_compare(void **state)
{
	struct dspec a = {.kind = DSPEC_UNIT, .what = "r.service", .name = "r"}, b = a;

	(void)state;
	assert_true(dspec_same_target(&a, &b));
	assert_true(dspec_same_but_policy(&a, &b));
	b.o.nrules = 3; /* the policy changes: still the same but for it */
	b.o.policy_file = "/p";
	assert_true(dspec_same_but_policy(&a, &b));
	b.o.idle_timeout = 5;
	assert_false(dspec_same_but_policy(&a, &b));
	b = a;
	b.o.log_file = "/elsewhere";
	assert_false(dspec_same_but_policy(&a, &b));
	b = a;
	b.o.containers_ip4 = 0x010011ac; /* --containers: the programs change */
	assert_false(dspec_same_but_policy(&a, &b));
	b = a;
	b.kind = DSPEC_CGROUP;
	assert_false(dspec_same_target(&a, &b));
}

/* The example the package ships loads (its policy file is the system's). */
static void
test_contrib_example(void **state)
{
	struct dconfig cfg;
	char errbuf[600] = "";

	(void)state;
	if (dconfig_load("contrib/daemon.json.in", &cfg, errbuf, sizeof(errbuf)))
		fail_msg("contrib/daemon.json.in: %s", errbuf);
	assert_int_equal(cfg.n, 1);
	assert_int_equal(cfg.specs[0].kind, DSPEC_UNIT);
	dconfig_free(&cfg);
	/* the DaemonSet's (the chart's copy; make k8s-check: the manifests' is
	 * the same): a selector, its default, its policy from policy_dir; and
	 * the kubelet's layouts the selector is for */
	setenv("NODE_IP", "192.0.2.7", 1); /* the DaemonSet's, from status.hostIP */
	if (dconfig_load("contrib/kubernetes/helm/egressctl/files/daemon.json", &cfg, errbuf,
			 sizeof(errbuf)))
		fail_msg("the chart's daemon.json: %s", errbuf);
	assert_int_equal(cfg.nselectors, 1);
	assert_int_equal(cfg.specs[0].o.containers_ip4, htonl(0xc0000207)); /* NODE_IP */
	assert_int_equal(cfg.dflt, DCONFIG_DFLT_UNCONFINED);
	assert_string_equal(cfg.specs[0].o.policy_file, "/etc/egressctl/policies/ci.json");
	assert_int_equal(dsel_match(cfg.specs[0].what, "/kubepods.slice/kubepods-podab12.slice"),
			 DSEL_MATCH);
	assert_int_equal(dsel_match(cfg.specs[0].what, "/kubepods.slice/kubepods-burstable.slice/"
						       "kubepods-burstable-podab12.slice"),
			 DSEL_MATCH);
	assert_int_equal(dsel_match(cfg.specs[0].what, "/kubepods.slice/kubepods-besteffort.slice"),
			 DSEL_BELOW);
	assert_int_equal(dsel_match(cfg.specs[0].what, "/system.slice"), DSEL_NONE);
	dconfig_free(&cfg);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_values),		cmocka_unit_test(test_policy_dir),
		cmocka_unit_test(test_dsel_match),	cmocka_unit_test(test_oci),
		cmocka_unit_test(test_docker_labels),	cmocka_unit_test(test_compare),
		cmocka_unit_test(test_contrib_example), cmocka_unit_test(test_unit_selector),
	};
	int failed = RUN_TABLE("dconfig_load", cfg_cases, run_cfg);

	failed += cmocka_run_group_tests_name("dconfig_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
