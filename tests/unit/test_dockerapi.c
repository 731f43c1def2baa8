// SPDX-License-Identifier: Apache-2.0
/* A confined job's Docker Engine API requests judged (dockerapi/): the
 * targets classified as dockerd routes them, /build's query, the create,
 * exec, update and volume bodies (every refused flag, and the ways Go's
 * JSON decoding would read a body otherwise than the judge: case, a key
 * twice, the top level read as the HostConfig), the cgroup parent set,
 * whose a container is, the host paths a container may bind, and the
 * JSON and UTF-8 the judge accepts. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "table.h"
#include "dockerapi/dockerapi.h"
#include "dockerapi/hostpath.h"
#include "dockerapi/idmap.h"
#include "dockerapi/json.h"
#include "dockerapi/rules.h"

#define PARENT "/egressctl/job"
#define ID     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- classify ---- */

struct cls_case {
	const char *name;
	const char *method, *target, *ctype;
	int rc; /* 0 or -EPERM */
	enum dk_kind kind;
	const char *id;	 /* the container in the path, if any */
	const char *msg; /* a part of the refusal */
};

static const struct cls_case cls_cases[] = {
	{"ping", "HEAD", "/_ping", NULL, 0, DK_OTHER, "", NULL},
	{"create", "POST", "/v1.41/containers/create?name=x", "application/json", 0, DK_CREATE, "",
	 NULL},
	{"create-unversioned", "POST", "/containers/create", NULL, 0, DK_CREATE, "", NULL},
	{"create-escaped", "POST", "/v1.41/containers/%63reate", NULL, 0, DK_CREATE, "", NULL},
	{"create-get", "GET", "/containers/create", NULL, 0, DK_OTHER, "", NULL},
	{"start", "POST", "/v1.41/containers/abc/start", NULL, 0, DK_START, "abc", NULL},
	{"exec", "POST", "/containers/abc/exec", NULL, 0, DK_EXEC, "abc", NULL},
	{"update", "POST", "/containers/abc/update", NULL, 0, DK_UPDATE, "abc", NULL},
	{"attach", "POST", "/v1.41/containers/" ID "/attach?stream=1", NULL, 0, DK_CONTAINER_USE,
	 ID, NULL},
	{"attach-ws", "GET", "/containers/abc/attach/ws", NULL, 0, DK_CONTAINER_USE, "abc", NULL},
	{"archive-put", "PUT", "/containers/abc/archive?path=/", NULL, 0, DK_CONTAINER_USE, "abc",
	 NULL},
	{"archive-get", "GET", "/containers/abc/archive?path=/", NULL, 0, DK_OTHER, "", NULL},
	{"restart", "POST", "/containers/abc/restart", NULL, 0, DK_CONTAINER_USE, "abc", NULL},
	{"name-with-slash", "POST", "/containers/a%2Fb/start", NULL, 0, DK_START, "a/b", NULL},
	{"wait", "POST", "/containers/abc/wait", NULL, 0, DK_OTHER, "", NULL},
	{"logs", "GET", "/containers/abc/logs?follow=1", NULL, 0, DK_OTHER, "", NULL},
	{"volume", "POST", "/volumes/create", NULL, 0, DK_VOLUME, "", NULL},
	{"build", "POST", "/v1.41/build?t=x&cgroupparent=&rm=1", "application/x-tar", 0, DK_BUILD,
	 "", NULL},
	{"build-parent", "POST", "/build?cgroupparent=%2Fx", NULL, -EPERM, DK_BUILD, "",
	 "--cgroup-parent"},
	{"build-parent-escaped-key", "POST", "/build?cgroup%70arent=/x", NULL, -EPERM, DK_BUILD, "",
	 "--cgroup-parent"},
	{"buildkit", "POST", "/build?version=2", NULL, -EPERM, DK_BUILD, "", "BuildKit"},
	{"buildkit-session", "POST", "/build?remote=client-session&version=2", NULL, -EPERM,
	 DK_BUILD, "", "BuildKit"},
	{"build-v1", "POST", "/build?version=1", NULL, 0, DK_BUILD, "", NULL},
	{"build-remote", "POST", "/build?remote=https://x.test/c.tar", NULL, -EPERM, DK_BUILD, "",
	 "remote build context"},
	{"build-semicolon", "POST", "/build?t=x;cgroupparent=/", NULL, -EPERM, DK_BUILD, "", "';'"},
	{"build-net-host", "POST", "/build?networkmode=host", NULL, -EPERM, DK_BUILD, "",
	 "docker build --network host is refused"},
	{"build-net-container", "POST", "/build?networkmode=container%3Aabc", NULL, -EPERM,
	 DK_BUILD, "", "docker build --network container:abc is refused"},
	{"build-net-bridge", "POST", "/build?networkmode=default", NULL, 0, DK_BUILD, "", NULL},
	{"build-net-named", "POST", "/build?networkmode=ci-net", NULL, 0, DK_BUILD, "", NULL},
	{"build-form", "POST", "/build", "application/x-www-form-urlencoded", -EPERM, DK_BUILD, "",
	 "form"},
	{"build-multipart", "POST", "/build", "multipart/form-data; boundary=x", -EPERM, DK_BUILD,
	 "", "form"},
	{"build-bad-escape", "POST", "/build?t=%zz", NULL, -EPERM, DK_BUILD, "", "percent"},
	{"import-url", "POST", "/images/create?fromSrc=http://x.test/i.tar", NULL, -EPERM, DK_OTHER,
	 "", "import of a URL"},
	{"import-stdin", "POST", "/images/create?fromSrc=-", NULL, 0, DK_OTHER, "", NULL},
	{"pull", "POST", "/images/create?fromImage=busybox&tag=latest", NULL, 0, DK_OTHER, "",
	 NULL},
	{"grpc", "POST", "/grpc", NULL, -EPERM, DK_OTHER, "", "DOCKER_BUILDKIT=0: the classic"},
	{"grpc-get", "GET", "/grpc", NULL, -EPERM, DK_OTHER, "", "BuildKit"},
	{"session", "POST", "/session", NULL, 0, DK_OTHER, "", NULL},
	{"plugin-pull", "POST", "/v1.41/plugins/pull?remote=x", NULL, -EPERM, DK_OTHER, "",
	 "docker plugin"},
	{"plugin-list", "GET", "/plugins", NULL, 0, DK_OTHER, "", NULL},
	{"libpod-create", "POST", "/v4.0.0/libpod/containers/create", NULL, -EPERM, DK_OTHER, "",
	 "podman's own API"},
	{"libpod-escaped", "POST", "/v4.0.0/%6cibpod/containers/create", NULL, -EPERM, DK_OTHER, "",
	 "podman's own API"},
	{"libpod-unversioned", "POST", "/libpod/play/kube", NULL, -EPERM, DK_OTHER, "",
	 "podman's own API"},
	{"libpod-ping", "GET", "/libpod/_ping", NULL, 0, DK_OTHER, "", NULL},
	{"unknown-post", "POST", "/v1.47/unknown/thing", NULL, -EPERM, DK_OTHER, "",
	 "not a route of docker's API"},
	{"unknown-delete", "DELETE", "/foo", NULL, -EPERM, DK_OTHER, "", "not a route"},
	{"unknown-get", "GET", "/foo", NULL, 0, DK_OTHER, "", NULL},
	{"ping-head", "HEAD", "/_ping", NULL, 0, DK_OTHER, "", NULL},
	{"exec-start", "POST", "/v1.41/exec/abc/start", NULL, 0, DK_OTHER, "", NULL},
	{"network-connect", "POST", "/networks/n/connect", NULL, 0, DK_NETWORK, "", NULL},
	{"network-disconnect", "POST", "/v1.41/networks/n/disconnect", NULL, 0, DK_NETWORK, "",
	 NULL},
	{"network-other", "POST", "/networks/n/other", NULL, 0, DK_OTHER, "", NULL},
	{"network-no-id", "POST", "/networks//connect", NULL, -EPERM, DK_OTHER, "", "segments"},
	{"network-create", "POST", "/networks/create", NULL, 0, DK_OTHER, "", NULL},
	{"network-remove", "DELETE", "/v1.41/networks/abc", NULL, 0, DK_NETWORK, "", NULL},
	{"network-prune", "POST", "/networks/prune", NULL, 0, DK_NETWORK, "", NULL},
	{"network-inspect", "GET", "/networks/abc", NULL, 0, DK_OTHER, "", NULL},
	{"image-delete", "DELETE", "/images/busybox", NULL, 0, DK_OTHER, "", NULL},
	{"build-prune", "POST", "/build/prune", NULL, 0, DK_OTHER, "", NULL},
	{"commit", "POST", "/commit?container=x", NULL, 0, DK_OTHER, "", NULL},
	{"swarm-init", "POST", "/swarm/init", NULL, -EPERM, DK_OTHER, "", "docker swarm"},
	{"service-create", "POST", "/services/create", NULL, -EPERM, DK_OTHER, "",
	 "docker service"},
	{"double-slash", "POST", "/containers//create", NULL, -EPERM, DK_OTHER, "", "segments"},
	{"dot-dot", "POST", "/x/../containers/create", NULL, -EPERM, DK_OTHER, "", "segments"},
	{"escaped-dot-dot", "POST", "/x/%2e%2e/containers/create", NULL, -EPERM, DK_OTHER, "",
	 "segments"},
	{"nul", "POST", "/containers/a%00b/start", NULL, -EPERM, DK_OTHER, "", "path"},
};

static void
run_cls(void **state)
{
	const struct cls_case *c = *state;
	struct dk_route r;
	struct dk_verdict v = {0};
	int rc = dk_classify(c->method, c->target, strlen(c->target), c->ctype, &r, &v);

	assert_int_equal(rc, c->rc);
	if (!rc) {
		assert_int_equal(r.kind, c->kind);
		assert_string_equal(r.id, c->id);
		assert_int_equal(r.own, c->id[0] != 0);
	} else {
		assert_non_null(strstr(v.msg, c->msg));
		assert_true(v.status == 400 || v.status == 403);
		assert_true(!strncmp(v.msg, "egressctl: ", 11));
	}
}

/* ---- registries dockerd would reach ---- */

struct reg_case {
	const char *name;
	const char *method, *target;
	const char *registry; /* "" none */
	unsigned short port;
	const char *what;
};

static const struct reg_case reg_cases[] = {
	{"pull-hub", "POST", "/v1.41/images/create?fromImage=busybox&tag=latest",
	 "registry-1.docker.io", 443, "docker pull from"},
	{"pull-hub-library", "POST", "/images/create?fromImage=library%2Fbusybox",
	 "registry-1.docker.io", 443, "docker pull from"},
	{"pull-docker-io", "POST", "/images/create?fromImage=docker.io/library/x",
	 "registry-1.docker.io", 443, "docker pull from"},
	{"pull-ghcr", "POST", "/images/create?fromImage=ghcr.io%2Fo%2Fx&tag=1", "ghcr.io", 443,
	 "docker pull from"},
	{"pull-port", "POST", "/images/create?fromImage=reg.test:5000/x", "reg.test", 5000,
	 "docker pull from"},
	{"pull-localhost", "POST", "/images/create?fromImage=localhost/x", "localhost", 443,
	 "docker pull from"},
	{"pull-v6", "POST", "/images/create?fromImage=%5B2001:db8::1%5D:5000/x", "2001:db8::1",
	 5000, "docker pull from"},
	{"pull-first-counts", "POST", "/images/create?fromImage=a.test/x&fromImage=busybox",
	 "a.test", 443, "docker pull from"},
	{"import", "POST", "/images/create?fromSrc=-&repo=x", "", 0, ""},
	{"push", "POST", "/v1.41/images/evil.test/x/push?tag=1", "evil.test", 443,
	 "docker push to"},
	{"push-hub", "POST", "/images/me/x/push", "registry-1.docker.io", 443, "docker push to"},
	{"manifest", "GET", "/distribution/q.test:444/x/json", "q.test", 444, "docker manifest of"},
	{"search", "GET", "/images/search?term=busybox", "index.docker.io", 443,
	 "docker search of"},
	{"search-registry", "GET", "/images/search?term=s.test/x", "s.test", 443,
	 "docker search of"},
	{"images-list", "GET", "/images/json", "", 0, ""},
	{"login", "POST", "/auth", "", 0, ""}, /* its body says */
};

static void
run_reg(void **state)
{
	const struct reg_case *c = *state;
	struct dk_route r;
	struct dk_verdict v = {0};

	assert_int_equal(dk_classify(c->method, c->target, strlen(c->target), NULL, &r, &v), 0);
	assert_string_equal(r.registry, c->registry);
	if (c->registry[0]) {
		assert_int_equal(r.rport, c->port);
		assert_string_equal(r.rwhat, c->what);
	}
}

static void
test_registry_of(void **state)
{
	char h[64];
	unsigned short port;

	(void)state;
	assert_int_equal(dk_registry_of("Upper/x", h, sizeof(h), &port), 0);
	assert_string_equal(h, "Upper");
	assert_int_equal(dk_registry_of("a.test:0/x", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(dk_registry_of("a.test:99999/x", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(dk_registry_of("a.test:/x", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(dk_registry_of("[::1/x", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(dk_registry_of("[::1]/x", h, sizeof(h), &port), 0);
	assert_string_equal(h, "::1");
	assert_int_equal(dk_registry_of("a-very-long-registry-name.test/x", h, 8, &port), -EINVAL);
}

static void
test_auth_registry(void **state)
{
	static const struct {
		const char *body, *host;
		unsigned short port;
	} cases[] = {
		{"{}", "index.docker.io", 443},
		{"{\"serveraddress\":\"https://index.docker.io/v1/\"}", "index.docker.io", 443},
		{"{\"serveraddress\":\"ghcr.io\"}", "ghcr.io", 443},
		{"{\"serveraddress\":\"https://reg.test:5000/v2/\"}", "reg.test", 5000},
		{"{\"serveraddress\":\"myreg\"}", "myreg.", 443},
	};
	char err[160];

	(void)state;
	for (size_t i = 0; i < NCASES(cases); i++) {
		struct dk_route r = {.kind = DK_AUTH};
		struct dk_verdict v = {0};
		struct dj *doc = dj_parse(cases[i].body, strlen(cases[i].body), err, sizeof(err));

		assert_int_equal(dk_auth_registry(doc, &r, &v), 0);
		assert_string_equal(r.registry, cases[i].host);
		assert_int_equal(r.rport, cases[i].port);
		assert_string_equal(r.rwhat, "docker login to");
		dj_free(doc);
	}
}

/* ---- targets rewritten ---- */

static void
test_build_target(void **state)
{
	struct dk_ctx c = {.parent = "/egressctl/ci job"};
	struct dk_verdict v = {0};
	char out[512];
	const char *t = "/v1.41/build?t=x&cgroupparent=&cgroup%70arent=&rm=1";

	(void)state;
	assert_int_equal(dk_build_target(t, strlen(t), &c, out, sizeof(out), &v), 0);
	assert_string_equal(out, "/v1.41/build?t=x&rm=1&cgroupparent=/egressctl/ci%20job");
	t = "/build";
	assert_int_equal(dk_build_target(t, strlen(t), &c, out, sizeof(out), &v), 0);
	assert_string_equal(out, "/build?cgroupparent=/egressctl/ci%20job");
	t = "/build?cgroupparent=/";
	assert_int_equal(dk_build_target(t, strlen(t), &c, out, sizeof(out), &v), -EPERM);
	t = "/build?t=x";
	assert_int_equal(dk_build_target(t, strlen(t), &c, out, 16, &v), -EPERM);
	assert_int_equal(v.status, 414);
}

static void
test_target_with_id(void **state)
{
	struct dk_route r;
	struct dk_verdict v = {0};
	char out[256];
	const char *t = "/v1.41/containers/web/start?detachKeys=x";

	(void)state;
	assert_int_equal(dk_classify("POST", t, strlen(t), NULL, &r, &v), 0);
	assert_int_equal(dk_target_with_id(t, strlen(t), &r, ID, out, sizeof(out)), 0);
	assert_string_equal(out, "/v1.41/containers/" ID "/start?detachKeys=x");
	t = "/containers/web/attach/ws";
	assert_int_equal(dk_classify("GET", t, strlen(t), NULL, &r, &v), 0);
	assert_int_equal(dk_target_with_id(t, strlen(t), &r, ID, out, sizeof(out)), 0);
	assert_string_equal(out, "/containers/" ID "/attach/ws");
	assert_int_equal(dk_target_with_id(t, strlen(t), &r, ID, out, 20), -ENAMETOOLONG);
}

/* ---- bodies ---- */

/* The host_path callback: refuses what starts with "/bad" (read-write),
 * or "/never" (even read-only); "/dsock" is docker's socket */
static int
fake_host_path(void *arg, const char *path, bool ro, char *why, size_t whylen)
{
	(void)arg;
	if (!strcmp(path, "/dsock"))
		return 1;
	if (!strncmp(path, "/never", 6) || (!ro && !strncmp(path, "/bad", 4))) {
		snprintf(why, whylen, "%s is fake-refused", path);
		return -EPERM;
	}
	return 0;
}

/* What the job's requests are judged with: its parent, the fake host
 * paths, the requester 1000:1000. */
static struct dk_ctx
job_ctx(void)
{
	return (struct dk_ctx){.parent = PARENT,
			       .place = true,
			       .host_path = fake_host_path,
			       .user_known = true,
			       .uid = 1000,
			       .gid = 1000};
}

struct body_case {
	const char *name;
	enum dk_kind kind;
	const char *body;
	const char *msg;       /* a part of the refusal; NULL: allowed */
	const char *parent_in; /* allowed create: "HostConfig" or "" (top level) */
};

static const struct body_case body_cases[] = {
	{"plain", DK_CREATE, "{\"Image\":\"x\",\"HostConfig\":{\"NetworkMode\":\"default\"}}", NULL,
	 "HostConfig"},
	{"no-hostconfig", DK_CREATE, "{\"Image\":\"x\"}", NULL, ""},
	{"null-hostconfig", DK_CREATE, "{\"Image\":\"x\",\"HostConfig\":null}", NULL, ""},
	{"network-host", DK_CREATE, "{\"HostConfig\":{\"NetworkMode\":\"host\"}}", NULL,
	 "HostConfig"},
	{"privileged", DK_CREATE, "{\"HostConfig\":{\"Privileged\":true}}",
	 "--privileged is refused in a confined job", NULL},
	{"privileged-false", DK_CREATE, "{\"HostConfig\":{\"Privileged\":false}}", NULL,
	 "HostConfig"},
	{"privileged-lowercase", DK_CREATE, "{\"hostconfig\":{\"privileged\":true}}",
	 "--privileged", NULL},
	{"privileged-top-level", DK_CREATE, "{\"Image\":\"x\",\"Privileged\":true}", "--privileged",
	 NULL},
	{"privileged-twice", DK_CREATE,
	 "{\"HostConfig\":{\"Privileged\":false,\"privileged\":true}}", "twice", NULL},
	{"hostconfig-twice", DK_CREATE, "{\"HostConfig\":{},\"HostConfig\":{\"Privileged\":true}}",
	 "twice", NULL},
	{"kelvin-key", DK_CREATE, "{\"HostConfig\":{\"Privileged\":true,\"\\u212aey\":1}}",
	 "printable ASCII", NULL},
	{"long-s-key", DK_CREATE, "{\"Ho\\u017ftConfig\":{\"Privileged\":true}}", "printable ASCII",
	 NULL},
	{"hostconfig-not-object", DK_CREATE, "{\"HostConfig\":1}", "not an object", NULL},
	{"cap-net-admin", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"NET_ADMIN\"]}}",
	 "--cap-add NET_ADMIN", NULL},
	{"cap-prefixed", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"cap_sys_admin\"]}}",
	 "--cap-add SYS_ADMIN", NULL},
	{"cap-all", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"ALL\"]}}", "--cap-add ALL", NULL},
	/* an AF_PACKET socket's frames: no hook of the job's cgroup sees them */
	{"cap-net-raw", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"NET_RAW\"]}}",
	 "--cap-add NET_RAW", NULL},
	{"cap-bpf", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"BPF\"]}}", "--cap-add BPF", NULL},
	{"cap-dac-read-search", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"DAC_READ_SEARCH\"]}}",
	 "--cap-add DAC_READ_SEARCH", NULL},
	{"cap-ok", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[\"SYS_PTRACE\",\"net_bind_service\"]}}",
	 NULL, "HostConfig"},
	{"cap-not-string", DK_CREATE, "{\"HostConfig\":{\"CapAdd\":[1]}}", "other than a string",
	 NULL},
	{"capabilities", DK_CREATE, "{\"HostConfig\":{\"Capabilities\":[]}}",
	 "HostConfig.Capabilities", NULL},
	{"pid-host", DK_CREATE, "{\"HostConfig\":{\"PidMode\":\"host\"}}", "--pid host", NULL},
	{"pid-container", DK_CREATE, "{\"HostConfig\":{\"PidMode\":\"container:x\"}}",
	 "--pid container:x", NULL},
	{"ipc-host", DK_CREATE, "{\"HostConfig\":{\"IpcMode\":\"host\"}}", "--ipc host", NULL},
	{"userns-host", DK_CREATE, "{\"HostConfig\":{\"UsernsMode\":\"host\"}}", "--userns host",
	 NULL},
	{"cgroup-parent", DK_CREATE, "{\"HostConfig\":{\"CgroupParent\":\"/x\"}}",
	 "--cgroup-parent", NULL},
	{"cgroup-parent-top", DK_CREATE, "{\"HostConfig\":{},\"CgroupParent\":\"/x\"}",
	 "--cgroup-parent", NULL},
	{"cgroup-parent-empty", DK_CREATE, "{\"HostConfig\":{\"CgroupParent\":\"\"}}", NULL,
	 "HostConfig"},
	{"cgroup", DK_CREATE, "{\"HostConfig\":{\"Cgroup\":\"container:x\"}}", "HostConfig.Cgroup",
	 NULL},
	{"seccomp", DK_CREATE, "{\"HostConfig\":{\"SecurityOpt\":[\"seccomp=unconfined\"]}}",
	 "--security-opt seccomp=unconfined", NULL},
	{"seccomp-colon", DK_CREATE, "{\"HostConfig\":{\"SecurityOpt\":[\"seccomp:unconfined\"]}}",
	 "--security-opt seccomp:unconfined", NULL},
	{"seccomp-profile", DK_CREATE, "{\"HostConfig\":{\"SecurityOpt\":[\"seccomp={}\"]}}",
	 "--security-opt seccomp={}", NULL},
	{"apparmor", DK_CREATE, "{\"HostConfig\":{\"SecurityOpt\":[\"apparmor=unconfined\"]}}",
	 "--security-opt apparmor=unconfined", NULL},
	{"label-disable", DK_CREATE, "{\"HostConfig\":{\"SecurityOpt\":[\"label=disable\"]}}",
	 "label=disable", NULL},
	{"systempaths", DK_CREATE,
	 "{\"HostConfig\":{\"SecurityOpt\":[\"systempaths=unconfined\"]}}", "systempaths", NULL},
	{"no-new-privileges", DK_CREATE,
	 "{\"HostConfig\":{\"SecurityOpt\":[\"no-new-privileges\"]}}", NULL, "HostConfig"},
	{"masked-paths-empty", DK_CREATE, "{\"HostConfig\":{\"MaskedPaths\":[]}}",
	 "HostConfig.MaskedPaths", NULL},
	{"readonly-paths-empty", DK_CREATE, "{\"HostConfig\":{\"ReadonlyPaths\":[]}}",
	 "HostConfig.ReadonlyPaths", NULL},
	{"device", DK_CREATE, "{\"HostConfig\":{\"Devices\":[{\"PathOnHost\":\"/dev/sda\"}]}}",
	 "--device", NULL},
	{"device-rule", DK_CREATE, "{\"HostConfig\":{\"DeviceCgroupRules\":[\"c *:* rwm\"]}}",
	 "--device-cgroup-rule", NULL},
	{"gpus", DK_CREATE, "{\"HostConfig\":{\"DeviceRequests\":[{}]}}", "--gpus", NULL},
	{"runtime", DK_CREATE, "{\"HostConfig\":{\"Runtime\":\"kata\"}}", "--runtime kata", NULL},
	{"runtime-runc", DK_CREATE, "{\"HostConfig\":{\"Runtime\":\"runc\"}}", NULL, "HostConfig"},
	{"volumes-from", DK_CREATE, "{\"HostConfig\":{\"VolumesFrom\":[\"x\"]}}", "--volumes-from",
	 NULL},
	{"volume-driver", DK_CREATE, "{\"HostConfig\":{\"VolumeDriver\":\"nfs\"}}",
	 "--volume-driver nfs", NULL},
	{"log-syslog", DK_CREATE, "{\"HostConfig\":{\"LogConfig\":{\"Type\":\"syslog\"}}}",
	 "--log-driver syslog", NULL},
	{"log-gelf", DK_CREATE, "{\"HostConfig\":{\"LogConfig\":{\"Type\":\"gelf\"}}}",
	 "--log-driver gelf", NULL},
	{"log-json", DK_CREATE, "{\"HostConfig\":{\"LogConfig\":{\"Type\":\"json-file\"}}}", NULL,
	 "HostConfig"},
	{"bind-refused", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/bad/x:/x\"]}}",
	 "-v /bad/x:/x is refused in a confined job: /bad/x is fake-refused", NULL},
	{"bind-ro", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/bad/x:/x:ro\"]}}", NULL,
	 "HostConfig"},
	{"bind-ro-among", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/bad/x:/x:z,ro\"]}}", NULL,
	 "HostConfig"},
	{"bind-never-ro", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/never:/x:ro\"]}}",
	 "-v /never:/x", NULL},
	{"bind-top-level", DK_CREATE, "{\"Binds\":[\"/never:/x\"]}", "-v /never:/x", NULL},
	{"named-volume", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"data:/x\"]}}", NULL,
	 "HostConfig"},
	{"binds-not-list", DK_CREATE, "{\"HostConfig\":{\"Binds\":\"/never:/x\"}}", "not a list",
	 NULL},
	{"mount-bind", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/bad\",\"Target\":\"/"
	 "x\"}]}}",
	 "--mount type=bind,source=/bad", NULL},
	{"mount-bind-ro", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/"
	 "bad\",\"ReadOnly\":true}]}}",
	 NULL, "HostConfig"},
	{"mount-tmpfs", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"tmpfs\",\"Target\":\"/t\"}]}}", NULL,
	 "HostConfig"},
	{"mount-npipe", DK_CREATE, "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"npipe\"}]}}",
	 "--mount type=npipe", NULL},
	{"mount-volume-bind-opts", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"volume\",\"Source\":\"v\",\"VolumeOptions\":{"
	 "\"DriverConfig\":{\"Options\":{\"type\":\"none\",\"o\":\"bind\",\"device\":\"/\"}}}}]}}",
	 "--mount volume-opt", NULL},
	{"mount-volume-driver", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"volume\",\"VolumeOptions\":{\"DriverConfig\":{"
	 "\"Name\":\"x\"}}}]}}",
	 "--mount volume-driver", NULL},
	{"exec-privileged", DK_EXEC, "{\"Cmd\":[\"sh\"],\"Privileged\":true}",
	 "docker exec --privileged", NULL},
	{"exec", DK_EXEC, "{\"Cmd\":[\"sh\"]}", NULL, NULL},
	{"update-parent", DK_UPDATE, "{\"CgroupParent\":\"/\"}", "--cgroup-parent", NULL},
	{"update-devices", DK_UPDATE, "{\"Devices\":[{}]}", "--device", NULL},
	{"update-memory", DK_UPDATE, "{\"Memory\":1000000}", NULL, NULL},
	{"volume-plain", DK_VOLUME, "{\"Name\":\"v\"}", NULL, NULL},
	{"volume-tmpfs", DK_VOLUME,
	 "{\"DriverOpts\":{\"type\":\"tmpfs\",\"device\":\"tmpfs\",\"o\":\"size=1m\"}}", NULL,
	 NULL},
	{"volume-bind", DK_VOLUME,
	 "{\"DriverOpts\":{\"type\":\"none\",\"device\":\"/\",\"o\":\"bind\"}}",
	 "docker volume create --opt", NULL},
	{"volume-tmpfs-bind", DK_VOLUME,
	 "{\"DriverOpts\":{\"type\":\"tmpfs\",\"device\":\"/\",\"o\":\"size=1m,bind\"}}",
	 "docker volume create --opt", NULL},
	{"volume-nfs", DK_VOLUME,
	 "{\"DriverOpts\":{\"type\":\"nfs\",\"device\":\":/x\",\"o\":\"addr=192.0.2.1\"}}",
	 "docker volume create --opt", NULL},
	{"volume-driver", DK_VOLUME, "{\"Driver\":\"sshfs\"}", "docker volume create --driver",
	 NULL},
	{"not-object", DK_CREATE, "[]", "not a JSON object", NULL},
	/* a read-write bind of a host path: the job's own uid:gid only (the
	 * set-id rule: the callers' 1000:1000) */
	{"setid-image-user", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}",
	 "-v /ok:/x (read-write) as the image's user is refused", NULL},
	{"setid-root", DK_CREATE, "{\"User\":\"0\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}",
	 "as 0 is refused in a confined job", NULL},
	{"setid-other-uid", DK_CREATE,
	 "{\"User\":\"1001:1000\",\"HostConfig\":{\"Binds\":[\"/ok:/x:z\"]}}", "(--user 1000:1000)",
	 NULL},
	{"setid-name", DK_CREATE, "{\"User\":\"builder\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}",
	 "as builder is refused", NULL},
	{"setid-mount", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/ok\",\"Target\":\"/x\"}]}}",
	 "--mount type=bind,source=/ok (read-write)", NULL},
	{"setid-top-level", DK_CREATE, "{\"Binds\":[\"/ok:/x\"]}", "(read-write)", NULL},
	{"setid-own", DK_CREATE, "{\"User\":\"1000:1000\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}",
	 NULL, "HostConfig"},
	{"setid-ro", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"/ok:/x:ro\"]}}", NULL, "HostConfig"},
	{"setid-mount-ro", DK_CREATE,
	 "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/ok\",\"Target\":\"/x\","
	 "\"ReadOnly\":true}]}}",
	 NULL, "HostConfig"},
	{"setid-named-volume", DK_CREATE, "{\"HostConfig\":{\"Binds\":[\"data:/x\"]}}", NULL,
	 "HostConfig"},
	{"setid-group-add", DK_CREATE,
	 "{\"User\":\"1000:1000\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"],\"GroupAdd\":[\"0\"]}}",
	 "--group-add beside a read-write bind", NULL},
	{"setid-nnp-false", DK_CREATE,
	 "{\"User\":\"1000:1000\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"],\"SecurityOpt\":[\"no-new-"
	 "privileges=false\"]}}",
	 "no-new-privileges=false", NULL},
	{"exec-root", DK_EXEC, "{\"Cmd\":[\"sh\"],\"User\":\"0\"}", "docker exec -u 0 is refused",
	 NULL},
	{"exec-root-name", DK_EXEC, "{\"Cmd\":[\"sh\"],\"User\":\"root\"}", "-u root", NULL},
	{"exec-own", DK_EXEC, "{\"Cmd\":[\"sh\"],\"User\":\"1000:1000\"}", NULL, NULL},
};

static void
run_body(void **state)
{
	const struct body_case *c = *state;
	struct dk_ctx ctx = job_ctx();
	struct dk_route r = {.kind = c->kind};
	struct dk_verdict v = {0};
	char err[160];
	struct dj *doc = dj_parse(c->body, strlen(c->body), err, sizeof(err));
	int rc;

	if (!doc && c->msg && strstr(err, c->msg))
		return; /* refused as it is read (a key twice) */
	assert_non_null(doc);
	rc = dk_judge_body(&r, doc, &ctx, &v);
	if (c->msg) {
		assert_int_equal(rc, -EPERM);
		if (!strstr(v.msg, c->msg))
			fail_msg("want '%s' in '%s'", c->msg, v.msg);
	} else {
		assert_int_equal(rc, 0);
	}
	if (!c->msg && c->parent_in) {
		const struct dj *o = c->parent_in[0] ? dj_get(doc, c->parent_in) : doc;

		assert_string_equal(dj_str(dj_get(o, "CgroupParent")), PARENT);
	}
	dj_free(doc);
}

/* Printed again, a judged body is what was judged, with the parent set
 * (and no-new-privileges beside a read-write bind) and NET_RAW dropped;
 * without place (a driver that cannot take it) no parent is set, and
 * NET_RAW is dropped still. */
static void
test_rewritten(void **state)
{
	struct dk_ctx ctx = job_ctx();
	struct dk_route r = {.kind = DK_CREATE};
	struct dk_verdict v = {0};
	const char *in =
		"{\"Image\":\"x\",\"User\":\"1000:1000\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}";
	char err[160], *out;
	struct dj *doc = dj_parse(in, strlen(in), err, sizeof(err));

	(void)state;
	assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), 0);
	out = dj_print(doc);
	assert_string_equal(out,
			    "{\"Image\":\"x\",\"User\":\"1000:1000\",\"HostConfig\":{\"Binds\":"
			    "[\"/ok:/x\"],\"SecurityOpt\":[\"no-new-privileges:true\"],"
			    "\"CgroupParent\":\"" PARENT "\",\"CapDrop\":[\"NET_RAW\"]}}");
	free(out);
	dj_free(doc);
	ctx.place = false;
	doc = dj_parse(in, strlen(in), err, sizeof(err));
	assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), 0);
	assert_null(dj_get(dj_get(doc, "HostConfig"), "CgroupParent"));
	assert_string_equal(dj_str(dj_at(dj_get(dj_get(doc, "HostConfig"), "CapDrop"), 0)),
			    "NET_RAW");
	dj_free(doc);
}

/* The idmap callback: "/idm/<n>" for a path, but what starts with
 * "/noidmap" (a file system that cannot be) */
static int
fake_idmap(void *arg, const char *path, unsigned int uid, unsigned int gid, uint64_t job, char *out,
	   size_t outlen, char *why, size_t whylen)
{
	int *n = arg;

	assert_int_equal(job, 7);
	if (!strncmp(path, "/noidmap", 8)) {
		snprintf(why, whylen, "fake: cannot be idmapped");
		return -EINVAL;
	}
	assert_int_equal(uid, 1000);
	assert_int_equal(gid, 1000);
	snprintf(out, outlen, "/idm/%d", (*n)++);
	return 0;
}

/* A container not run as the job's user: its read-write binds (Binds and
 * Mounts, top level and HostConfig) through idmapped copies, read-only
 * ones, volumes and docker's socket as they were, MKNOD dropped,
 * no-new-privileges; refused when a path cannot be idmapped, with
 * --cap-add MKNOD, and whenever root asks. */
static void
test_idmapped(void **state)
{
	int n = 0;
	struct dk_ctx ctx = job_ctx();
	struct dk_route r = {.kind = DK_CREATE};
	struct dk_verdict v = {0};
	const char *in =
		"{\"Image\":\"x\",\"HostConfig\":{\"Binds\":[\"/ok:/x\",\"/ok/ro:/r:ro\","
		"\"data:/d\",\"/dsock:/var/run/docker.sock\",\"/ok/z:/z:z\"],\"Mounts\":[{\"Type\":"
		"\"bind\",\"Source\":\"/ok/m\",\"Target\":\"/m\"},{\"Type\":\"bind\",\"Source\":"
		"\"/ok/mr\",\"Target\":\"/mr\",\"ReadOnly\":true}]}}";
	static const struct {
		const char *body, *msg;
	} refused[] = {
		{"{\"HostConfig\":{\"Binds\":[\"/noidmap/a:/x\"]}}",
		 "-v /noidmap/a:/x (read-write) as the image's user or root is refused in a "
		 "confined job: such a bind is idmapped (your uid:gid as the container's root), "
		 "and "
		 "/noidmap/a cannot be: fake: cannot be idmapped; run it as you (--user "
		 "1000:1000)"},
		{"{\"HostConfig\":{\"Binds\":[\"/ok:/x\"],\"CapAdd\":[\"mknod\"]}}",
		 "--cap-add MKNOD beside a read-write bind"},
		{"{\"User\":\"0\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"],\"GroupAdd\":[\"5\"]}}",
		 "--group-add beside a read-write bind"},
	};
	char err[160], *out;
	struct dj *doc = dj_parse(in, strlen(in), err, sizeof(err));

	(void)state;
	ctx.idmap = fake_idmap;
	ctx.arg = &n;
	ctx.job = 7;
	assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), 0);
	out = dj_print(doc);
	assert_string_equal(
		out, "{\"Image\":\"x\",\"HostConfig\":{\"Binds\":[\"/idm/0:/x\",\"/ok/ro:/r:ro\","
		     "\"data:/d\",\"/dsock:/var/run/docker.sock\",\"/idm/1:/z:z\"],\"Mounts\":[{"
		     "\"Type\":\"bind\",\"Target\":\"/m\",\"Source\":\"/idm/2\"},{\"Type\":"
		     "\"bind\",\"Source\":\"/ok/mr\",\"Target\":\"/mr\",\"ReadOnly\":true}],"
		     "\"CapDrop\":[\"MKNOD\",\"NET_RAW\"],\"SecurityOpt\":[\"no-new-privileges:"
		     "true\"],\"CgroupParent\":\"" PARENT "\"}}");
	free(out);
	dj_free(doc);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		doc = dj_parse(refused[i].body, strlen(refused[i].body), err, sizeof(err));
		assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), -EPERM);
		if (!strstr(v.msg, refused[i].msg))
			fail_msg("want '%s' in '%s'", refused[i].msg, v.msg);
		dj_free(doc);
	}
	/* root asking: no read-write bind, as any user, idmapped or not */
	ctx.uid = 0;
	ctx.gid = 0;
	for (int k = 0; k < 2; k++) {
		const char *b = k ? "{\"User\":\"0:0\",\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}"
				  : "{\"HostConfig\":{\"Binds\":[\"/ok:/x\"]}}";

		doc = dj_parse(b, strlen(b), err, sizeof(err));
		assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), -EPERM);
		assert_non_null(strstr(v.msg, "-v /ok:/x (read-write) asked for by root (uid:gid "
					      "0:0) is refused in a confined job"));
		dj_free(doc);
	}
	r.kind = DK_EXEC;
	doc = dj_parse("{\"User\":\"0:0\"}", 14, err, sizeof(err));
	assert_int_equal(dk_judge_body(&r, doc, &ctx, &v), -EPERM);
	assert_non_null(strstr(v.msg, "docker exec -u 0:0 is refused"));
	dj_free(doc);
	assert_int_equal(n, 3);
}

/* Is path a mount point (in this process's mountinfo)? */
static bool
mounted(const char *path)
{
	char line[8192], *p;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		p = line;
		for (int i = 0; i < 4 && p; i++)
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		found = p && !strncmp(p, path, strlen(path)) && p[strlen(path)] == ' ';
	}
	fclose(f);
	return found;
}

/* Real idmapped mounts (root, and a file system that takes them): what
 * root makes through one is 4242's on the disk; the same path and job
 * gets its mount again, another job a mount of its own; a job gone takes
 * its mounts, the rest stay; the end takes every one and the directory. */
static void
test_idmaps_real(void **state)
{
	static struct dk_idmaps m;
	char tmp[] = "/tmp/egr-idmap-XXXXXX", src[PATH_MAX], file[PATH_MAX + 64];
	char a[PATH_MAX + 32], b[PATH_MAX + 32], c[PATH_MAX + 32], why[256];
	struct stat st;
	int fd, err;

	(void)state;
	if (geteuid()) {
		skip(); /* (make check runs as root) */
		return;
	}
	assert_non_null(mkdtemp(tmp));
	snprintf(src, sizeof(src), "%s/src", tmp);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(chown(src, 4242, 4242), 0);
	dk_idmaps_init(&m, tmp);
	fd = open(src, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	err = dk_idmap_make(&m, fd, 4242, 4242, 1, a, sizeof(a), why, sizeof(why));
	if (err == -EINVAL || err == -EOPNOTSUPP) {
		fprintf(stderr, "idmaps_real: %s takes no idmapped mounts here: %s\n", tmp, why);
		close(fd);
		dk_idmaps_free(&m);
		rmdir(src);
		rmdir(tmp);
		skip();
		return;
	}
	assert_int_equal(err, 0);
	assert_true(mounted(a));
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_uid, 0); /* 4242 is its 0 */
	snprintf(file, sizeof(file), "%s/made", a);
	assert_int_equal(close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 04755)), 0);
	snprintf(file, sizeof(file), "%s/made", src);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_uid, 4242);
	assert_int_equal(st.st_gid, 4242);
	assert_int_equal(dk_idmap_make(&m, fd, 4242, 4242, 1, b, sizeof(b), why, sizeof(why)), 0);
	assert_string_equal(a, b);
	assert_int_equal(dk_idmap_make(&m, fd, 4242, 4242, 2, c, sizeof(c), why, sizeof(why)), 0);
	assert_string_not_equal(a, c);
	dk_idmaps_forget_job(&m, 1);
	assert_false(mounted(a));
	assert_int_not_equal(stat(a, &st), 0);
	assert_true(mounted(c));
	dk_idmaps_free(&m);
	assert_false(mounted(c));
	assert_int_not_equal(stat(m.dir, &st), 0);
	close(fd);
	unlink(file);
	assert_int_equal(rmdir(src), 0);
	assert_int_equal(rmdir(tmp), 0);
}

/* ---- whose a container is ---- */

static void
test_owned(void **state)
{
	struct dk_ctx ctx = {.parent = PARENT};
	struct dk_route r = {.kind = DK_START};
	struct dk_verdict v = {0};
	char err[160], id[80];
	const char *ours = "{\"Id\":\"" ID "\",\"HostConfig\":{\"CgroupParent\":\"" PARENT "\"}}";
	const char *theirs = "{\"Id\":\"" ID "\",\"HostConfig\":{\"CgroupParent\":\"\"}}";
	const char *below =
		"{\"Id\":\"" ID "\",\"HostConfig\":{\"CgroupParent\":\"" PARENT "/x\"}}";
	const char *noid = "{\"Id\":\"abc\",\"HostConfig\":{\"CgroupParent\":\"" PARENT "\"}}";
	struct dj *doc;

	(void)state;
	strcpy(r.id, "web");
	doc = dj_parse(ours, strlen(ours), err, sizeof(err));
	assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), 0);
	assert_string_equal(id, ID);
	dj_free(doc);
	doc = dj_parse(theirs, strlen(theirs), err, sizeof(err));
	assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), -EPERM);
	assert_non_null(strstr(v.msg, "container web is not one of this job's"));
	dj_free(doc);
	doc = dj_parse(below, strlen(below), err, sizeof(err));
	assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), -EPERM);
	dj_free(doc);
	doc = dj_parse(noid, strlen(noid), err, sizeof(err));
	assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), -EPERM);
	assert_int_equal(v.status, 404);
	dj_free(doc);
}

/* A build's --network: the first networkmode, as dockerd reads it, is
 * looked up unless it is docker0's or none; host and container: anywhere
 * refused; the network's driver must be bridge. */
static void
test_build_network(void **state)
{
	static const struct {
		const char *target, *network;
		int rc;
	} cases[] = {
		{"/build?networkmode=mv", "mv", 0},
		{"/v1.41/build?t=x&networkmode=8f8d6a8e&q=1", "8f8d6a8e", 0},
		{"/build?networkmode=bridge", "", 0},
		{"/build?networkmode=default", "", 0},
		{"/build?networkmode=none", "", 0},
		{"/build?networkmode=", "", 0},
		{"/build", "", 0},
		{"/build?networkmode=bridge&networkmode=mv", "", 0},   /* dockerd reads bridge */
		{"/build?networkmode=mv&networkmode=bridge", "mv", 0}, /* dockerd reads mv */
		{"/build?networkmode=m%76", "mv", 0},
		{"/build?networkmode=host%20", "host ", 0}, /* no host: a name to look up */
		{"/build?networkmode=bridge&networkmode=host", "", -EPERM},
		{"/build?networkmode=container:x", "", -EPERM},
	};
	const char *macvlan = "{\"Name\":\"mv\",\"Driver\":\"macvlan\"}";
	const char *bridge = "{\"Name\":\"n2\",\"Driver\":\"bridge\"}";
	const char *none = "{\"Name\":\"n3\"}";
	struct dk_route r;
	struct dk_verdict v;
	char err[160];
	struct dj *doc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&v, 0, sizeof(v));
		assert_int_equal(
			dk_classify("POST", cases[i].target, strlen(cases[i].target), NULL, &r, &v),
			cases[i].rc);
		if (!cases[i].rc)
			assert_string_equal(r.network, cases[i].network);
	}
	strcpy(r.network, "mv");
	doc = dj_parse(macvlan, strlen(macvlan), err, sizeof(err));
	assert_int_equal(dk_build_network(doc, &r, &v), -EPERM);
	assert_int_equal(v.status, 403);
	assert_non_null(strstr(v.msg, "docker build --network mv is refused in a confined job: "
				      "its driver is macvlan"));
	dj_free(doc);
	doc = dj_parse(none, strlen(none), err, sizeof(err));
	assert_int_equal(dk_build_network(doc, &r, &v), -EPERM);
	assert_non_null(strstr(v.msg, "its driver is unknown"));
	dj_free(doc);
	doc = dj_parse(bridge, strlen(bridge), err, sizeof(err));
	assert_int_equal(dk_build_network(doc, &r, &v), 0);
	dj_free(doc);
}

/* docker cp into a container of the job's: not with a read-write bind of
 * a host path (dockerd writes the archive's files as root) */
static void
test_owned_archive(void **state)
{
	struct dk_ctx ctx = job_ctx();
	struct dk_route r = {.kind = DK_CONTAINER_USE, .action = "archive"};
	struct dk_verdict v = {0};
	char err[160], id[80];
	static const struct {
		const char *mounts;
		int rc;
	} cases[] = {
		{"[]", 0},
		{"[{\"Type\":\"bind\",\"Source\":\"/w\",\"RW\":false}]", 0},
		{"[{\"Type\":\"volume\",\"Source\":\"/var/lib/v\",\"RW\":true}]", 0},
		{"[{\"Type\":\"tmpfs\",\"Source\":\"\",\"RW\":true}]", 0},
		{"[{\"Type\":\"bind\",\"Source\":\"/dsock\",\"RW\":true}]", 0},
		{"[{\"Type\":\"bind\",\"Source\":\"/dsock\",\"RW\":true},"
		 "{\"Type\":\"bind\",\"Source\":\"/w\",\"RW\":true}]",
		 -EPERM},
		{"[{\"Type\":\"bind\",\"RW\":true}]", -EPERM},
	};

	(void)state;
	strcpy(r.id, "web");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[512];
		struct dj *doc;

		snprintf(json, sizeof(json),
			 "{\"Id\":\"" ID "\",\"HostConfig\":{\"CgroupParent\":\"" PARENT
			 "\"},\"Mounts\":%s}",
			 cases[i].mounts);
		doc = dj_parse(json, strlen(json), err, sizeof(err));
		assert_non_null(doc);
		assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), cases[i].rc);
		if (cases[i].rc)
			assert_non_null(strstr(v.msg, "docker cp into container " ID
						      " is refused in a confined job: it binds"));
		/* only docker cp: starting it is anybody's */
		r.kind = DK_START;
		assert_int_equal(dk_owned(doc, &ctx, &r, id, sizeof(id), &v), 0);
		r.kind = DK_CONTAINER_USE;
		dj_free(doc);
	}
}

/* ---- the slice a systemd-driven dockerd takes as a parent ---- */

static void
test_slice_of(void **state)
{
	static const struct {
		const char *cgroup, *root, *slice; /* slice NULL: -EINVAL */
	} cases[] = {
		{"/egr.slice", "", "egr.slice"},
		{"/egr.slice", "/", "egr.slice"},
		{"/egr.slice/egr-job.slice", "", "egr-job.slice"},
		{"/egr.slice/egr-job.slice/egr-job-x_1.slice", "", "egr-job-x_1.slice"},
		{"/sd/egr.slice", "/sd", "egr.slice"},
		{"/sd/egr.slice", "/sd/", "egr.slice"},
		{"/sd/egr.slice", "", NULL},		  /* "sd" is no slice */
		{"/sdx/egr.slice", "/sd", NULL},	  /* not below the root */
		{"/sd", "/sd", NULL},			  /* the root itself */
		{"/egressctl/job", "", NULL},		  /* cgroupfs-style */
		{"/egr-job.slice", "", NULL},		  /* its parent would be egr.slice */
		{"/egr.slice/other-job.slice", "", NULL}, /* not egr's */
		{"/egr.slice/egr-a-b.slice", "", NULL},	  /* skips egr-a.slice */
		{"/egr.slice/egr--b.slice", "", NULL},
		{"/egr.slice/egr-.slice", "", NULL},
		{"/egr.slice/job", "", NULL}, /* the job's leaf is no slice */
		{"/.slice", "", NULL},
		{"/-.slice", "", NULL},
		{"/a\\x2db.slice", "", NULL},
		{"/egr.slice/", "", NULL},
		{"//egr.slice", "", NULL},
		{"", "", NULL},
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = dk_slice_of(cases[i].cgroup, cases[i].root, out, sizeof(out));

		if (cases[i].slice) {
			assert_int_equal(rc, 0);
			assert_string_equal(out, cases[i].slice);
		} else {
			assert_int_equal(rc, -EINVAL);
		}
	}
	assert_int_equal(dk_slice_of("/egr.slice", "", out, 9), -ENAMETOOLONG);
}

/* ---- JSON ---- */

struct json_case {
	const char *name;
	const char *text;
	size_t len; /* 0: strlen */
	bool ok;
};

static const struct json_case json_cases[] = {
	{"object", "{\"a\":1}", 0, true},
	{"whitespace-after", "{\"a\":1} \n", 0, true},
	{"two-values", "{\"a\":1} {\"b\":2}", 0, false},
	{"garbage-after", "{\"a\":1}x", 0, false},
	{"utf8", "{\"a\":\"\xc3\xa9\"}", 0, true},
	{"bad-utf8", "{\"a\":\"\xff\"}", 0, false},
	{"overlong", "{\"a\":\"\xc0\xaf\"}", 0, false},
	{"surrogate-bytes", "{\"a\":\"\xed\xa0\x80\"}", 0, false},
	{"lone-surrogate-escape", "{\"a\":\"\\ud800\"}", 0, false},
	{"nul", "{\"a\":1}\0", 8, false},
	{"empty", "", 0, false},
	{"truncated", "{\"a\":", 0, false},
};

static void
run_json(void **state)
{
	const struct json_case *c = *state;
	char err[160] = "";
	struct dj *doc = dj_parse(c->text, c->len ? c->len : strlen(c->text), err, sizeof(err));

	assert_int_equal(doc != NULL, c->ok);
	if (!doc)
		assert_true(err[0]);
	dj_free(doc);
}

static void
test_message_json(void **state)
{
	char *s = dj_message_json("egressctl: \"x\"\n");

	(void)state;
	assert_string_equal(s, "{\"message\":\"egressctl: \\\"x\\\"\\n\"}");
	free(s);
}

/* ---- host paths ---- */

struct path_case {
	const char *name;
	const char *path;
	bool ro;
	const char *why; /* NULL: allowed */
};

static const struct path_case path_cases[] = {
	{"root", "/", true, "the host's /"},
	{"home", "/home/runner/work", false, NULL},
	{"tmp", "/tmp/x", false, NULL},
	{"proc", "/proc", true, "/proc is /proc"},
	{"in-sys", "/sys/fs/bpf", true, "inside /sys"},
	{"run", "/run/user/1000", true, "inside /run"},
	{"holds-run", "/var", true, NULL}, /* /var/run is a link: its real path is /run */
	{"holds-the-socket", "/srv/d", true, "holds /srv/d/docker.sock"},
	{"the-socket", "/srv/d/docker.sock", true, "is /srv/d/docker.sock"},
	{"cgroup-mount", "/mnt/cg/x", true, "inside /mnt/cg"},
	{"etc-rw", "/etc/cron.d", false, "inside /etc (bind it read-only: ro)"},
	{"etc-ro", "/etc/ssl/certs", true, NULL},
	{"holds-etc-rw", "/", false, "the host's /"},
	{"docker-root-rw", "/var/lib/docker/volumes", false, "inside /var/lib"},
	{"var-rw", "/var", false, "holds /var/lib"},
	{"relative", "x/y", true, "not an absolute path"},
	{"prefix-not-parent", "/runner", false, NULL},
};

static void
run_path(void **state)
{
	const struct path_case *c = *state;
	static const char mi[] = "30 1 0:26 / /mnt/cg rw - cgroup2 cgroup2 rw\n"
				 "31 1 0:27 / /sys/fs/bpf rw - bpf bpf rw\n";
	const char *never[] = {"/srv/d/docker.sock", NULL};
	struct dk_paths p;
	char why[256] = "";
	int rc;

	assert_int_equal(dk_paths_init(&p, mi, never, NULL), 0);
	rc = dk_paths_judge(&p, c->path, c->ro, why, sizeof(why));
	if (c->why) {
		assert_int_equal(rc, -EPERM);
		if (!strstr(why, c->why))
			fail_msg("want '%s' in '%s'", c->why, why);
	} else {
		assert_int_equal(rc, 0);
	}
	dk_paths_free(&p);
}

/* dk_resolve: links followed, what does not exist kept as given */
static void
test_resolve(void **state)
{
	char dir[] = "/tmp/egr-dkres-XXXXXX", p[PATH_MAX], want[PATH_MAX], out[PATH_MAX];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/root", dir);
	assert_int_equal(symlink("/", p), 0);
	snprintf(p, sizeof(p), "%s/d", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/root", dir);
	assert_int_equal(dk_resolve(p, out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	snprintf(p, sizeof(p), "%s/root/etc", dir);
	assert_int_equal(dk_resolve(p, out, sizeof(out)), 0);
	assert_string_equal(out, "/etc");
	snprintf(p, sizeof(p), "%s/root/nonexistent-egr/x", dir);
	assert_int_equal(dk_resolve(p, out, sizeof(out)), 0);
	assert_string_equal(out, "/nonexistent-egr/x");
	snprintf(p, sizeof(p), "%s/d/new/../../root", dir);
	assert_int_equal(dk_resolve(p, out, sizeof(out)), -EINVAL);
	snprintf(p, sizeof(p), "%s/d//new", dir);
	snprintf(want, sizeof(want), "%s/d//new", dir);
	assert_int_equal(dk_resolve(p, out, sizeof(out)), 0);
	assert_string_equal(out, want);
	assert_int_equal(dk_resolve("rel", out, sizeof(out)), -EINVAL);
	snprintf(p, sizeof(p), "%s/root", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/d", dir);
	rmdir(p);
	rmdir(dir);
}

/* ---- unescape ---- */

static void
test_unescape(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(dk_unescape("a%2Fb+c", 7, true, out, sizeof(out)), 0);
	assert_string_equal(out, "a/b c");
	assert_int_equal(dk_unescape("a+c", 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "a+c");
	assert_int_equal(dk_unescape("%2", 2, false, out, sizeof(out)), -EINVAL);
	assert_int_equal(dk_unescape("%", 1, false, out, sizeof(out)), -EINVAL);
	assert_int_equal(dk_unescape("%00", 3, false, out, sizeof(out)), -EINVAL);
	assert_int_equal(dk_unescape("0123456789abcdef", 16, false, out, sizeof(out)),
			 -ENAMETOOLONG);
}

/* --docker-services: which running containers a filter takes (an element
 * of GET /containers/json each), and which filters are filters */
static void
test_services_filter(void **state)
{
	static const char *c_json = "{\"Id\":\"x\",\"Labels\":{\"a1b2c3\":\"\",\"role\":\"db\"},"
				    "\"NetworkSettings\":{\"Networks\":{\"bridge\":{},"
				    "\"github_network_0123abcd\":{}}}}";
	struct dj *c = dj_parse(c_json, strlen(c_json), NULL, 0);
	char err[128];

	(void)state;
	assert_non_null(c);
	assert_true(dk_filter_selects("network=github_network_*", c));
	assert_true(dk_filter_selects("network=bridge", c));
	assert_false(dk_filter_selects("network=github_network", c));
	assert_false(dk_filter_selects("network=host", c));
	assert_true(dk_filter_selects("label=a1b2c3", c));
	assert_true(dk_filter_selects("label=role=db", c));
	assert_false(dk_filter_selects("label=role=web", c));
	assert_false(dk_filter_selects("label=rol", c));
	assert_false(dk_filter_selects("label=role=", c));
	dj_free(c);
	c = dj_parse("{\"Id\":\"x\"}", 10, NULL, 0);
	assert_false(dk_filter_selects("network=*", c));
	assert_false(dk_filter_selects("label=a", c));
	dj_free(c);
	assert_int_equal(dockerapi_filter_check("network=github_network_*", err, sizeof(err)), 0);
	assert_int_equal(dockerapi_filter_check("label=k=v", err, sizeof(err)), 0);
	assert_int_equal(dockerapi_filter_check("label=k", err, sizeof(err)), 0);
	assert_int_equal(dockerapi_filter_check("network=", err, sizeof(err)), -EINVAL);
	assert_int_equal(dockerapi_filter_check("label==v", err, sizeof(err)), -EINVAL);
	assert_int_equal(dockerapi_filter_check("name=x", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "expected network=GLOB"));
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_build_target),	cmocka_unit_test(test_target_with_id),
		cmocka_unit_test(test_rewritten),	cmocka_unit_test(test_owned),
		cmocka_unit_test(test_owned_archive),	cmocka_unit_test(test_idmapped),
		cmocka_unit_test(test_idmaps_real),	cmocka_unit_test(test_slice_of),
		cmocka_unit_test(test_message_json),	cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_unescape),	cmocka_unit_test(test_registry_of),
		cmocka_unit_test(test_auth_registry),	cmocka_unit_test(test_build_network),
		cmocka_unit_test(test_services_filter),
	};
	int failed = 0;

	failed += RUN_TABLE("classify", cls_cases, run_cls);
	failed += RUN_TABLE("registries", reg_cases, run_reg);
	failed += RUN_TABLE("bodies", body_cases, run_body);
	failed += RUN_TABLE("json", json_cases, run_json);
	failed += RUN_TABLE("host paths", path_cases, run_path);
	failed += cmocka_run_group_tests_name("dockerapi", misc, NULL, NULL);
	return failed ? 1 : 0;
}
