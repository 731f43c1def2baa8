#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages that egressctl's build and tests need, and
# nothing else. Idempotent: packages already present are not touched.
#   tools/install-deps.sh          build, package and test dependencies
#   tools/install-deps.sh --bench  also the benchmark peers and load tools
#   tools/install-deps.sh --containers  also a container runtime for
#                                  tests/e2e/containers.sh (make check asks)
#   tools/install-deps.sh --build  what building egressctl needs, alone
#                                  (compiler, libraries, clang, bpftool:
#                                  the GitHub Action's build: true)
set -eu

BUILD="clang llvm bpftool make gcc pkg-config libbpf-dev libelf-dev zlib1g-dev
libevent-dev libc-ares-dev libjansson-dev libssl-dev scdoc"
# (libssl-dev: OpenSSL for HTTPS inspection, under libevent's
# bufferevent_openssl which libevent-dev ships, and HTTPS to OTLP collectors)
# make deb (dpkg-buildpackage, debhelper) and its test (lintian, man, completion, logrotate)
PACKAGE="build-essential dpkg-dev debhelper fakeroot lintian man-db bash-completion zsh logrotate"
TEST="libcmocka-dev libclang-rt-14-dev iproute2 python3 curl dnsmasq-base publicsuffix
socat netcat-openbsd tcpdump dnsutils util-linux procps nodejs openssl dbus sudo pkexec nftables
git python3-pip golang-go default-jdk-headless squid busybox-static python3-yaml
python3-kubernetes python3-requests"
# (golang-go, default-jdk-headless: Go's and Java's own TLS clients for the
# kernel-verified path's test, kverify.sh, and the inspection's, inspect.sh,
# with python3-requests; squid, with basic_ncsa_auth: the
# corporate proxy of upstream.sh, and a peer of the benchmark;
# busybox-static: the userland of dist.sh's root, which holds nothing else
# but the release binary and glibc; pkexec (and polkitd): a route to root
# cisudo.sh shows the job cannot take)
BENCH="nginx wrk trafficserver tinyproxy haproxy dante-server microsocks
mitmproxy hyperfine linux-perf valgrind"

# podman, rootful, with runc (crun refuses a hybrid cgroup layout), netavark
# and iptables for its bridge; busybox-static is the test image's userland;
# containerd (1.6: containerd, ctr, containerd-shim-runc-v2) for
# containers.sh's own containerd; docker.io and docker-compose (v1, 1.29:
# Debian 12 has no compose plugin) for tests/e2e/docker.sh
CONTAINERS="podman runc netavark iptables busybox-static containerd docker.io docker-compose"

want="$BUILD $PACKAGE $TEST"
for a in "$@"; do
	case $a in
	--build)
		[ $# = 1 ] || { echo "install-deps: --build goes alone" >&2; exit 2; }
		want=$BUILD
		;;
	--bench) want="$want $BENCH" ;;
	--containers) want="$want $CONTAINERS" ;;
	*) echo "install-deps: unknown option $a" >&2; exit 2 ;;
	esac
done

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
