#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging: make install/uninstall, the man pages, the completion, the
# Debian package (build, lintian at --pedantic, apt install, the init
# script, logrotate, purge), and that the man pages and the README cannot
# drift from --help.
#
#   tests/e2e/package.sh build/egressctl       (make e2e and make package-check)
#   E2E_TESTS="install bash_completion" ...    run only these tests
#   E2E_KEEP=1 ...                             keep /tmp/egr-pkg-PID
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, "# ..." notes, and
# "N passed, M failed" last; exit 1 if any failed. Without root the tests
# that need it (apt, a private mount namespace) are skipped, said in a note.
# The apt test leaves an egressctl that was installed before it alone (and
# says so). Nothing here sends a packet: `run --allow example.test -- true`
# opens no socket.

ALL_TESTS="man_options man_commands cli_conventions kernel_versions readme_synopsis man_render policy_files install
install_conffile bash_completion bash_completion_cgroup zsh_completion deb apt"

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
W=/tmp/egr-pkg-$$
PY=/usr/bin/python3
PASS=0
FAILED=0
INSTALLED_PKG=	# set while this suite has the package installed
MADE_GROUP=	# set when the package's postinst made the group egressctl here
CG_MADE=()	# cgroups this suite made, removed at exit

ok() { echo "ok $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
note() { echo "# $*"; }
is_root() { [ "$(id -u)" = 0 ]; }

# make in the tree, with this suite's build directory; the caller's make
# variables (MAKEFLAGS of make e2e) stay out.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$SRC" OUT="$OUT" "$@"; }

cleanup() {
	local d
	if [ -n "$INSTALLED_PKG" ]; then
		apt-get purge -y -q egressctl >/dev/null 2>&1 || note "cannot purge egressctl"
	fi
	[ -n "$MADE_GROUP" ] && groupdel egressctl 2>/dev/null
	for d in "${CG_MADE[@]}"; do rmdir "$d" 2>/dev/null; done
	if [ -n "${E2E_KEEP:-}" ]; then note "kept $W"; else rm -rf "$W"; fi
}

interrupted() {
	fail interrupted "SIG$1 during the run"
	echo "$PASS passed, $FAILED failed"
	exit "$2"
}

# ------------------------------------------------------------ what --help says

# help_options CMD: the options `egressctl CMD --help` names, one a line,
# from its usage lines (up to the first blank line: "[--policy FILE]",
# "[-j|--json]", "[-f]") and the heads of its option lines ("  -q, --quiet",
# "  --allow RULE  ..."); never from prose ("as timeout -k", "its --help").
help_options() {
	"$EGR" "$1" --help 2>&1 | "$PY" -c '
import re, sys
seen = []
def take(s, prose):
    for m in re.finditer(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)(?=(.?))", s):
        o, nxt = m.group(1), m.group(2)
        if prose and not o.startswith("--") and nxt not in (",", "|", "]"):
            continue
        if o not in seen:
            seen.append(o)
usage = False
for line in sys.stdin.read().splitlines():
    if line.startswith("usage:"):
        usage = True
    if usage and not line.strip():
        usage = False
    if usage:
        take(line, True)
        continue
    m = re.match(r"( {0,6})-", line)
    if m:
        take(re.split(r"  ", line.strip())[0], False)
print("\n".join(seen))'
}

# commands: the commands `egressctl help` lists (the lines under "commands:").
commands() {
	"$EGR" help | awk '/^[^ ]/ { on = /^commands:/; next } on && /^  +[a-z]/ { print $1 }'
}

# has_usage CMD: does `egressctl CMD --help` print CMD's own usage?
has_usage() { "$EGR" "$1" --help 2>&1 | grep -q "^usage: egressctl $1\b"; }

# man_section_options CMD: the options the "## CMD" section of egressctl(1)
# documents (the heads of its option lists: "*--opt* _ARG_", "*-q*, *--quiet*").
man_section_options() {
	awk -v cmd="## $1" '$0 == cmd { on = 1; next } /^##? / { on = 0 } on && /^\*-/' \
		"$SRC/man/egressctl.1.scd" | grep -oE '\*--?[A-Za-z][A-Za-z0-9-]*\*' | tr -d '*' | sort -u
}

# readme_synopsis: the options the README's usage synopsis (the first code
# block under "## Usage") names.
readme_synopsis() {
	awk '/^## Usage/ { u = 1 } u && /^```/ { if (b) exit; b = 1; next } b' "$SRC/README.md" |
		grep -oP '(?<![\w-])--?[A-Za-z][A-Za-z0-9-]*' | sort -u
}

# missing WANT GOT: the lines of WANT (a list) that GOT lacks.
missing() { comm -23 <(sort -u <<<"$1") <(sort -u <<<"$2") | tr '\n' ' '; }

# ------------------------------------------------------------------- tests

# Every option each command's --help lists is documented in its section of
# egressctl(1), and the section documents no option --help does not list.
test_man_options() {
	local c want got m x
	for c in $(commands); do
		has_usage "$c" || continue
		want=$(help_options "$c")
		got=$(man_section_options "$c")
		m=$(missing "$want" "$got")
		x=$(missing "$got" "$want")
		if [ "$c" = run ] && [ -z "$want" ]; then
			fail "man_options.$c" "egressctl $c --help lists no option"
		elif [ -n "$m" ]; then
			fail "man_options.$c" "egressctl(1) section '## $c' lacks: $m"
		elif [ -n "$x" ]; then
			fail "man_options.$c" "egressctl(1) section '## $c' documents options --help lacks: $x"
		else
			ok "man_options.$c"
		fi
	done
}

# Every command of `egressctl help` has its section and synopsis line in
# egressctl(1), and every section is a command.
test_man_commands() {
	local want got syn
	want=$(commands)
	got=$(awk '/^# COMMANDS/ { on = 1; next } /^# / { on = 0 } on && /^## / { print $2 }' \
		"$SRC/man/egressctl.1.scd")
	syn=$(awk '/^# SYNOPSIS/ { on = 1; next } /^# / { on = 0 } on' "$SRC/man/egressctl.1.scd" |
		sed -n 's/^\*egressctl \([a-z-]*\)\*.*/\1/p')
	if [ -z "$want" ]; then
		fail man_commands "egressctl help lists no command"
	elif [ -n "$(missing "$want" "$got")$(missing "$got" "$want")" ]; then
		fail man_commands "help lists: $(echo $want); egressctl(1) has sections: $(echo $got)"
	elif [ -n "$(missing "$want" "$syn")" ]; then
		fail man_commands "SYNOPSIS of egressctl(1) lacks: $(missing "$want" "$syn")"
	else
		ok man_commands
	fi
}

# The conventions of every command: --help on stdout with status 0 and
# nothing on stderr; an unknown option a usage error (status 2, a line on
# stderr naming it, nothing on stdout); no command, or help for one that
# does not exist, status 2; --version and version the same line, with
# egressctl's, the BPF ABI's and libbpf's versions.
test_cli_conventions() {
	local c out err rc bad=
	for c in $(commands); do
		out=$("$EGR" "$c" --help 2>"$W/cli.err")
		rc=$?
		[ $rc = 0 ] && [ -n "$out" ] && [ ! -s "$W/cli.err" ] && grep -q "^usage: egressctl $c" <<<"$out" ||
			bad="$bad $c --help (status $rc, stderr: $(head -c 80 "$W/cli.err"))"
		out=$("$EGR" "$c" --no-such-option-x 2>"$W/cli.err")
		rc=$?
		[ $rc = 2 ] && [ -z "$out" ] && grep -q -- 'no-such-option-x' "$W/cli.err" ||
			bad="$bad $c --no-such-option-x (status $rc)"
	done
	[ -z "$bad" ] && ok cli_conventions.commands || fail cli_conventions.commands "$bad"
	local rc2
	"$EGR" >/dev/null 2>&1
	rc=$?
	"$EGR" help no-such-command >/dev/null 2>&1
	rc2=$?
	[ $rc = 2 ] && [ $rc2 = 2 ] && ok cli_conventions.usage_errors ||
		fail cli_conventions.usage_errors "no command or help no-such-command: not status 2"
	out=$("$EGR" --version)
	[ "$out" = "$("$EGR" version)" ] && grep -Eq '^egressctl [^ ]+ \(BPF ABI [0-9]+, libbpf [0-9]+\.[0-9]+\)$' <<<"$out" &&
		ok cli_conventions.version || fail cli_conventions.version "--version: $out"
}

# The kernels egressctl needs, as `egressctl version` says them (the
# binary's own numbers, the ones its start-up errors name), are the ones
# the README, egressctl(1), debian/control and action.yml give: they once
# said 6.2 for everything while the daemon needed 6.5.
test_kernel_versions() {
	local line min daemon unix bad=
	line=$("$EGR" version | sed -n 's/^needs Linux \([0-9.]*\) or later; \([0-9.]*\) for the daemon; \([0-9.]*\) for the unix socket hooks$/\1 \2 \3/p')
	read -r min daemon unix <<<"$line"
	if [ -z "$unix" ]; then
		fail kernel_versions "egressctl version names no kernels: $("$EGR" version | tr '\n' '|')"
		return
	fi
	# each: FILE and an ERE (on the file joined into one line) per number
	kv_has() {
		tr -s ' \n' ' ' <"$SRC/$1" | grep -Eq -- "$2" || bad="$bad $1:/$2/"
	}
	kv_has README.md "Linux ≥ ${min//./\\.} "
	kv_has README.md "≥ ${daemon//./\\.} for \`egressctl daemon\`"
	kv_has README.md "≥ ${unix//./\\.} for the unix-socket hooks"
	kv_has man/egressctl.1.scd "Linux ${min//./\\.} or later is required"
	kv_has man/egressctl.1.scd "${daemon//./\\.} or later for \*daemon\*"
	kv_has man/egressctl.1.scd "${unix//./\\.} or later for the unix socket hooks"
	kv_has debian/control "Needs Linux ${min//./\\.} or later \(${daemon//./\\.} for the daemon, ${unix//./\\.} for the unix socket hooks\)"
	kv_has action.yml "a kernel of ${daemon//./\\.} or later \(the daemon's\)"
	[ -z "$bad" ] && ok kernel_versions || fail kernel_versions "not saying Linux $min/$daemon/$unix:$bad"
}

# The README's usage synopsis names every option of run, check and status
# (their --help flag aside: the synopsis says `egressctl help [COMMAND]`).
test_readme_synopsis() {
	local c m got
	got=$(readme_synopsis)
	for c in run check status; do
		m=$(missing "$(help_options "$c" | grep -vxE -- '-h|--help')" "$got")
		if [ -n "$m" ]; then
			fail "readme_synopsis.$c" "README's usage synopsis lacks: $m"
		else
			ok "readme_synopsis.$c"
		fi
	done
}

# Both pages are built by make man, and man renders them without a warning.
test_man_render() {
	local p err
	if ! mk -s man >"$W/man.log" 2>&1; then
		fail man_render "make man failed: $(tail -3 "$W/man.log")"
		return
	fi
	for p in egressctl.1 egressctl-policy.5; do
		err=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$OUT/man/$p" 2>&1 >"$W/$p.txt")
		if [ -n "$err" ]; then
			fail "man_render.$p" "man warns: $err"
		elif ! grep -q "^NAME" "$W/$p.txt" || ! grep -q "^       ${p%.*} - " "$W/$p.txt"; then
			fail "man_render.$p" "no NAME section in man -l's output"
		else
			ok "man_render.$p"
		fi
	done
}

# contrib/policy.json (the installed example) and the policy file of
# egressctl-policy(5)'s EXAMPLES load, and its JSON Schema is JSON; the
# default policy (/etc/egressctl/policy.json) loads and denies everything.
test_policy_files() {
	local out rc
	out=$("$EGR" check --policy "$SRC/contrib/policy.json" github.com 2>&1)
	if [ $? = 0 ]; then ok policy_files.example; else fail policy_files.example "$out"; fi
	out=$("$EGR" check --policy "$SRC/contrib/default-policy.json" example.com 2>&1)
	rc=$?
	if [ $rc = 1 ] && [ "$out" = "deny: example.com:443 — no rule allows it" ]; then
		ok policy_files.default_denies
	else
		fail policy_files.default_denies "check --policy contrib/default-policy.json example.com: exit $rc: $out"
	fi
	"$PY" - "$SRC/man/egressctl-policy.5.scd" "$W" <<-'EOF'
		import json, re, sys
		text = open(sys.argv[1]).read()
		blocks = [b for b in re.findall(r"^```\n(.*?)^```$", text, re.S | re.M)
		          if b.lstrip().startswith("{")]
		for i, b in enumerate(blocks):
		    json.loads(b)
		    open("%s/man-%d.json" % (sys.argv[2], i), "w").write(b)
	EOF
	[ $? = 0 ] || fail policy_files.man "a JSON block of egressctl-policy(5) is not JSON"
	if [ ! -f "$W/man-1.json" ]; then
		fail policy_files.man "egressctl-policy(5) has no schema and example blocks"
	elif ! grep -q '"\$schema"' "$W/man-0.json"; then
		fail policy_files.man "the first JSON block of egressctl-policy(5) is not the schema"
	elif ! out=$("$EGR" check --policy "$W/man-1.json" github.com 2>&1); then
		fail policy_files.man "the example of egressctl-policy(5) does not load: $out"
	else
		ok policy_files.man
	fi
	# the default policy egressctl-policy(5) shows is the one installed
	if "$PY" - "$SRC/contrib/default-policy.json" "$W"/man-*.json <<-'EOF'
		import json, sys
		want = json.load(open(sys.argv[1]))
		sys.exit(0 if any(json.load(open(f)) == want for f in sys.argv[2:]) else 1)
	EOF
	then
		ok policy_files.man_default
	else
		fail policy_files.man_default "egressctl-policy(5) does not show contrib/default-policy.json as it is"
	fi
}

# installed_files: "PATH MODE" of every file make install PREFIX=/usr/local
# puts in place, sorted: the fixed ones, then each of docs/*.md and of
# contrib/ci/ (its mode as in the tree: the hooks and scripts executable)
installed_files() {
	local f
	{
		cat <<-'EOF'
			/usr/local/bin/egressctl 755
			/usr/local/etc/egressctl/daemon.json 644
			/usr/local/etc/egressctl/policy.json 644
			/usr/local/etc/egressctl/users.json 644
			/usr/local/etc/logrotate.d/egressctl 644
			/usr/local/lib/systemd/system/egressctl-users.service 644
			/usr/local/lib/systemd/system/egressctl.service 644
			/usr/local/share/bash-completion/completions/egressctl 644
			/usr/local/share/doc/egressctl/examples/policy.json 644
			/usr/local/share/man/man1/egressctl.1 644
			/usr/local/share/man/man5/egressctl-policy.5 644
			/usr/local/share/zsh/site-functions/_egressctl 644
		EOF
		for f in "$SRC"/docs/*.md; do
			echo "/usr/local/share/doc/egressctl/${f##*/} 644"
		done
		(cd "$SRC" && find contrib/ci -type f) | while read -r f; do
			echo "/usr/local/share/egressctl/ci/${f#contrib/ci/} $([ -x "$SRC/$f" ] && echo 755 || echo 644)"
		done
	} | LC_ALL=C sort
}

# make install DESTDIR= puts exactly these files there, with these modes;
# make uninstall takes every one back and leaves no directory of ours.
test_install() {
	local root=$W/inst got want
	want=$(installed_files)
	if ! mk -s install DESTDIR="$root" >"$W/install.log" 2>&1; then
		fail install "make install failed: $(tail -3 "$W/install.log")"
		return
	fi
	got=$(cd "$root" && find . ! -type d -printf '/%P %m\n' | LC_ALL=C sort)
	if [ "$got" != "$want" ]; then
		fail install.files "installed:
$got
expected:
$want"
	else
		ok install.files
	fi
	# the daemon's unit and configuration name the installed paths
	grep -qx 'ExecStart=/usr/local/bin/egressctl daemon --config /usr/local/etc/egressctl/daemon.json' \
		"$root/usr/local/lib/systemd/system/egressctl.service" && ok install.unit_paths ||
		fail install.unit_paths "egressctl.service: $(grep Exec "$root/usr/local/lib/systemd/system/egressctl.service" | tr '\n' '|')"
	grep -q '"/usr/local/etc/egressctl/policy.json"' "$root/usr/local/etc/egressctl/daemon.json" &&
		ok install.config_paths || fail install.config_paths "daemon.json: $(tr '\n' ' ' <"$root/usr/local/etc/egressctl/daemon.json")"
	# logrotate's postrotate signals only a daemon running the installed binary
	grep -q '= "/usr/local/bin/egressctl" \]' "$root/usr/local/etc/logrotate.d/egressctl" &&
		ok install.logrotate_paths || fail install.logrotate_paths "logrotate.d/egressctl: $(grep exe "$root/usr/local/etc/logrotate.d/egressctl")"
	# one set of paths: the binary and the man page built for PREFIX=/usr/local
	# name the configuration make install wrote, not /etc's
	local help
	help=$("$root/usr/local/bin/egressctl" daemon --help 2>&1 | tr -s ' \n' ' ')
	if [[ $help == *'default /usr/local/etc/egressctl/daemon.json '* ]] &&
		[[ $help == *'$EGRESSCTL_POLICY or /usr/local/etc/egressctl/policy.json'* ]] &&
		grep -q '/usr/local/etc/egressctl/daemon' "$root/usr/local/share/man/man1/egressctl.1" &&
		! grep -Eq '(^|[^l])/etc/egressctl|@SYSCONFDIR@|@RUNDIR@' "$root/usr/local/share/man/man1/egressctl.1" \
			"$root/usr/local/share/man/man5/egressctl-policy.5"; then
		ok install.baked_paths
	else
		fail install.baked_paths "daemon --help or the man pages do not name /usr/local/etc/egressctl: $("$root/usr/local/bin/egressctl" daemon --help 2>&1 | grep -A1 'default' | tr '\n' ' ')"
	fi
	cmp -s "$root/usr/local/bin/egressctl" "$EGR" && ok install.binary ||
		fail install.binary "the installed binary is not $EGR"
	mk -s uninstall DESTDIR="$root" >"$W/uninstall.log" 2>&1 ||
		fail uninstall "make uninstall failed: $(tail -3 "$W/uninstall.log")"
	got=$(cd "$root" && find . ! -type d -printf '/%P\n')
	[ -z "$got" ] && ok uninstall.files || fail uninstall.files "left: $got"
	got=$(cd "$root" && find . -type d -name '*egressctl*' -printf '/%P\n')
	[ -z "$got" ] && ok uninstall.dirs || fail uninstall.dirs "left: $got"
	# PREFIX=/usr: the same files under /usr
	mk -s install DESTDIR="$root" PREFIX=/usr >/dev/null 2>&1
	got=$(cd "$root" && find . ! -type d -printf '/%P %m\n' | LC_ALL=C sort)
	want=$(sed 's|^/usr/local/etc/|/etc/|; s|^/usr/local/|/usr/|' <<<"$want" | LC_ALL=C sort)
	[ "$got" = "$want" ] && ok install.prefix ||
		fail install.prefix "with PREFIX=/usr: $got"
	mk -s uninstall DESTDIR="$root" PREFIX=/usr >/dev/null 2>&1
	got=$(cd "$root" && find . ! -type d -printf '/%P\n')
	[ -z "$got" ] && ok uninstall.prefix || fail uninstall.prefix "left: $got"
}

# A configuration file (one under SYSCONFDIR, as the daemon's will be):
# install keeps one that exists, uninstall removes it only when unchanged.
test_install_conffile() {
	local root=$W/conf f
	local extra='contrib/policy.json:$(SYSCONFDIR)/egressctl/t.json:644'
	f=$root/usr/local/etc/egressctl/t.json
	mk -s install DESTDIR="$root" INSTALL_FILES="$extra" >/dev/null 2>&1
	cmp -s "$f" "$SRC/contrib/policy.json" || { fail conffile "not installed as $f"; return; }
	echo '{}' >"$f"
	mk -s install DESTDIR="$root" INSTALL_FILES="$extra" >/dev/null 2>&1
	[ "$(cat "$f")" = '{}' ] && ok conffile.kept || fail conffile.kept "install replaced a changed $f"
	mk -s uninstall DESTDIR="$root" INSTALL_FILES="$extra" >/dev/null 2>&1
	[ -f "$f" ] && ok conffile.changed || fail conffile.changed "uninstall removed a changed $f"
	cp "$SRC/contrib/policy.json" "$f"
	mk -s uninstall DESTDIR="$root" INSTALL_FILES="$extra" >/dev/null 2>&1
	[ ! -e "$f" ] && [ ! -d "${f%/*}" ] && ok conffile.removed ||
		fail conffile.removed "uninstall left $f or its directory"
}

# bash_complete LINE: what the bash completion offers for LINE (cursor at
# its end), one a line; in $W/fakebin-first PATH when FAKE=1.
bash_complete() {
	COMP_FILE=${COMP_FILE:-$SRC/contrib/completion/egressctl.bash} bash -c '
		source /usr/share/bash-completion/bash_completion
		source "$COMP_FILE"
		COMP_LINE=$1 COMP_POINT=${#1}
		read -ra COMP_WORDS <<<"$1"
		[[ $1 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_egressctl 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"' _ "$1" | sort -u
}

# a_set NAME WANT GOT: the two lists hold the same lines.
a_set() {
	local m x
	m=$(missing "$2" "$3")
	x=$(missing "$3" "$2")
	if [ -z "$2" ]; then
		fail "$1" "nothing expected (is the binary broken?)"
	elif [ -n "$m$x" ]; then
		fail "$1" "missing: ${m:--}; unexpected: ${x:--}"
	else
		ok "$1"
	fi
}

# a_has NAME WANT GOT: GOT holds every line of WANT.
a_has() {
	local m
	m=$(missing "$2" "$3")
	[ -z "$m" ] && [ -n "$2" ] && ok "$1" || fail "$1" "missing: ${m:-(nothing expected)}; got: $(echo $3)"
}

completion_files() {
	mkdir -p "$W/files/sub"
	: >"$W/files/a.json"
	: >"$W/files/b.txt"
	# an egressctl whose run --help names one more option, taking a FILE
	mkdir -p "$W/fakebin"
	cat >"$W/fakebin/egressctl" <<-EOF
		#!/bin/sh
		"$EGR" "\$@"; rc=\$?
		[ "\$1 \$2" = "run --help" ] && echo "  --zz-new-option FILE  a new option"
		exit \$rc
	EOF
	chmod +x "$W/fakebin/egressctl"
}

test_bash_completion() {
	local c d
	completion_files
	d=$(dirname "$EGR")
	export PATH="$d:$PATH"
	a_set bash.commands "$(commands)" "$(bash_complete 'egressctl ')"
	a_set bash.help "$(commands)" "$(bash_complete 'egressctl help ')"
	for c in $(commands); do
		[ -n "$(help_options "$c")" ] || continue
		a_set "bash.options.$c" "$(help_options "$c")" "$(bash_complete "egressctl $c -")"
	done
	a_set bash.policy_file "$(printf '%s\n' "$W/files/a.json" "$W/files/b.txt" "$W/files/sub")" \
		"$(bash_complete "egressctl run --policy $W/files/")"
	a_set bash.policy_file_eq "$W/files/a.json" "$(bash_complete "egressctl run --policy=$W/files/a")"
	a_set bash.user "root" "$(bash_complete 'egressctl run --user roo')"
	a_has bash.cmd_after_dashdash "true" "$(bash_complete 'egressctl run --allow x.test -- tru')"
	a_has bash.cmd "true" "$(bash_complete 'egressctl run -q --allow x.test tru')"
	a_set bash.method "GET" "$(bash_complete 'egressctl check --method G')"
	# derived from --help when completing: a new option needs no edit here
	a_set bash.derived "--zz-new-option" \
		"$(PATH="$W/fakebin:$PATH" bash_complete 'egressctl run --zz')"
	a_set bash.derived_arg "$W/files/a.json" \
		"$(PATH="$W/fakebin:$PATH" bash_complete "egressctl run --zz-new-option $W/files/a")"
}

# --cgroup completes the names under <cgroup2 mount>/egressctl/, the mount
# read from mountinfo: in a mount namespace of its own where the only
# cgroup2 mount is $W/cg, the bash and zsh completions both find it there.
test_bash_completion_cgroup() {
	local cg2 name=pkg-$$-a out
	if ! is_root; then
		note "bash_completion_cgroup: needs root (skipped)"
		return
	fi
	cg2=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
		/proc/self/mountinfo | head -1)
	[ -n "$cg2" ] || { fail cgroup_completion "no cgroup2 mount"; return; }
	[ -d "$cg2/egressctl" ] || { mkdir "$cg2/egressctl" && CG_MADE+=("$cg2/egressctl"); }
	mkdir "$cg2/egressctl/$name" && CG_MADE=("$cg2/egressctl/$name" "${CG_MADE[@]}")
	mkdir -p "$W/cg"
	cat >"$W/cgns.sh" <<-'EOF'
		# in a private mount namespace: every cgroup2 mount away, one at $W/cg
		set -e
		for m in $(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' /proc/self/mountinfo); do
			umount -l "$m"
		done
		mount -t cgroup2 none "$W/cg"
		set +e
		echo "mounts: $(awk '$0 ~ / - cgroup2 / { print $5 }' /proc/self/mountinfo | tr '\n' ' ')"
		echo "bash: $(bash_complete "egressctl run --cgroup ${NAME%-*}-" | tr '\n' ' ')"
		echo "zsh: $(zsh_complete "egressctl run --cgroup ${NAME%-*}-" | tr '\n' ' ')"
	EOF
	out=$(W=$W NAME=$name unshare -m --propagation private bash -c "
		$(declare -f bash_complete zsh_complete missing)
		SRC='$SRC' PATH='$(dirname "$EGR"):$PATH'
		set -- ; source '$W/cgns.sh'" 2>&1)
	note "${out//$'\n'/; }"
	if ! grep -q "^mounts: $W/cg $" <<<"$out"; then
		fail cgroup_completion.ns "the namespace's cgroup2 mounts: $out"
	fi
	grep -qx "bash: $name " <<<"$out" && ok cgroup_completion.bash ||
		fail cgroup_completion.bash "expected $name under $W/cg/egressctl: $out"
	if command -v zsh >/dev/null; then
		grep -qx "zsh: $name " <<<"$out" && ok cgroup_completion.zsh ||
			fail cgroup_completion.zsh "expected $name under $W/cg/egressctl: $out"
	fi
}

# zsh_complete LINE: what the zsh completion offers for LINE, one a line: an
# interactive zsh on a pty (zpty) with a compadd that records its matches.
zsh_complete() {
	local out=$W/zsh.$RANDOM
	: >"$out"
	ZC_OUT=$out ZC_DIR=${ZC_DIR:-$SRC/contrib/completion} zsh -f -c '
		zmodload zsh/zpty || exit 1
		zpty z zsh -f -i
		zpty -w z "PROMPT= RPROMPT=; fpath=($ZC_DIR \$fpath); autoload -U compinit; compinit -u -D"
		zpty -w z "zstyle \":completion:*\" menu no"
		zpty -w z "compadd() { local -a m; builtin compadd -O m \"\$@\"; print -rl -- \"\${(@)m/#/<M>}\" >>$ZC_OUT; builtin compadd \"\$@\"; }"
		zpty -w z "done-w() { print -r -- \"<END>\" >>$ZC_OUT; }; zle -N done-w; bindkey \"^X\" done-w"
		zpty -w -n z "$1"$'"'"'\t\x18'"'"'
		for i in {1..200}; do grep -q "^<END>" $ZC_OUT && break; sleep 0.05; done
		zpty -d z' _ "$1"
	sed -n 's/^<M>//p' "$out" | sort -u
	rm -f "$out"
}

test_zsh_completion() {
	local c d
	if ! command -v zsh >/dev/null; then
		fail zsh "zsh is not installed (tools/install-deps.sh)"
		return
	fi
	if ! zsh -n "$SRC/contrib/completion/_egressctl"; then
		fail zsh.syntax "zsh -n fails on contrib/completion/_egressctl"
		return
	fi
	completion_files
	d=$(dirname "$EGR")
	export PATH="$d:$PATH"
	a_set zsh.commands "$(commands)" "$(zsh_complete 'egressctl ')"
	for c in $(commands); do
		[ -n "$(help_options "$c")" ] || continue
		a_has "zsh.options.$c" "$(help_options "$c")" "$(zsh_complete "egressctl $c -")"
	done
	a_has zsh.policy_file "$(printf '%s\n' a.json b.txt sub)" \
		"$(zsh_complete "egressctl run --policy $W/files/")"
	a_has zsh.cmd "true" "$(zsh_complete 'egressctl run -q --allow x.test tru')"
	a_has zsh.derived "--zz-new-option" "$(PATH="$W/fakebin:$PATH" zsh_complete 'egressctl run --zz')"
}

# deb_files: the paths the package must hold, sorted: what make install
# PREFIX=/usr puts in place (the unit in /lib), the init script, the
# lintian overrides, and debhelper's changelog and copyright; the docs as
# NAME.md whether dh_compress compressed them or not
deb_files() {
	{
		installed_files | awk '{ print $1 }' |
			sed 's|^/usr/local/etc/|/etc/|; s|^/usr/local/lib/systemd/|/lib/systemd/|; s|^/usr/local/share/zsh/site-functions/|/usr/share/zsh/vendor-completions/|; s|^/usr/local/|/usr/|'
		printf '%s\n' /etc/init.d/egressctl /usr/share/lintian/overrides/egressctl \
			/usr/share/doc/egressctl/changelog.gz /usr/share/doc/egressctl/copyright
	} | sed 's|^\(/usr/share/man/.*\)$|\1.gz|' | LC_ALL=C sort
}

# make deb builds the package into $OUT/deb, with the files install puts
# under /usr (the CI scripts' modes kept), its configuration as conffiles
# and the runtime libraries as Depends; lintian -I -E --pedantic on the
# .changes (the package and its debug symbols) prints no tag that
# debian/*.lintian-overrides does not override, and nothing at all about
# the copyright file or a licence.
test_deb() {
	local deb got want rc t0=$SECONDS f
	if ! mk deb >"$W/deb.log" 2>&1; then
		fail deb "make deb failed: $(tail -5 "$W/deb.log")"
		return
	fi
	note "make deb: $((SECONDS - t0)) s"
	deb=$(ls "$OUT"/deb/egressctl_*_amd64.deb 2>/dev/null)
	if [ "$(wc -w <<<"$deb")" != 1 ]; then
		fail deb "expected one $OUT/deb/egressctl_*_amd64.deb, found: ${deb:-none}"
		return
	fi
	DEB=$deb
	ok deb.built
	want=$(deb_files)
	got=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' |
		sed 's|^\(/usr/share/doc/egressctl/[^/]*\.md\)\.gz$|\1|' | LC_ALL=C sort)
	[ "$got" = "$want" ] && ok deb.files || fail deb.files "missing: $(missing "$want" "$got"); unexpected: $(missing "$got" "$want")"
	# the CI scripts keep their modes; the init script is executable
	want=$(installed_files | awk '$1 ~ /\/share\/egressctl\/ci\// { sub("^/usr/local", "/usr", $1); print $1, $2 }'
		echo "/etc/init.d/egressctl 755")
	got=$(dpkg-deb -c "$deb" | awk '$1 ~ /^-/ && $6 ~ /^\.\/(usr\/share\/egressctl\/ci|etc\/init\.d)\// {
		m = 0; for (i = 2; i <= 10; i++) m = m * 2 + (substr($1, i, 1) != "-"); sub(/^\./, "", $6)
		printf "%s %o\n", $6, m }')
	a_set deb.modes "$want" "$got"
	got=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>/dev/null)
	a_set deb.conffiles "$(printf '%s\n' /etc/egressctl/daemon.json /etc/egressctl/policy.json \
		/etc/egressctl/users.json /etc/init.d/egressctl /etc/logrotate.d/egressctl)" "$got"
	got=$(dpkg-deb -f "$deb" Depends)
	a_has deb.depends "$(printf '%s\n' libbpf1 libc-ares2 libjansson4 libc6 libevent-2.1-7)" \
		"$(tr ',' '\n' <<<"$got" | awk '{ print $1 }')"
	a_has deb.recommends publicsuffix "$(dpkg-deb -f "$deb" Recommends | tr ',' '\n' | awk '{ print $1 }')"
	t0=$SECONDS
	lintian -I -E --pedantic --show-overrides --tag-display-limit 0 --fail-on none \
		"${deb%/*}"/egressctl_*_amd64.changes >"$W/lintian.log" 2>&1
	rc=$?
	note "lintian: $((SECONDS - t0)) s; overridden (debian/*.lintian-overrides, each with its reason): $(grep -c '^O:' "$W/lintian.log")"
	grep '^O:' "$W/lintian.log" | while read -r l; do note "lintian: $l"; done
	if grep -q '^[EWIPXC]:' "$W/lintian.log"; then
		fail deb.lintian "tags not overridden: $(grep '^[EWIPXC]:' "$W/lintian.log" | tr '\n' ' ')"
	elif [ $rc != 0 ]; then
		fail deb.lintian "lintian exited $rc: $(tail -3 "$W/lintian.log")"
	else
		ok deb.lintian
	fi
	# the licence as Debian ships it: debian/copyright itself, no tag of
	# lintian's about it at any level (no extra LICENSE file in the package)
	got=$(grep -E '^[EWIP]: [^ ]+: [a-z0-9-]*(copyright|licen[cs]e)' "$W/lintian.log")
	if ! dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/egressctl/copyright |
		cmp -s - "$SRC/debian/copyright"; then
		fail deb.copyright "/usr/share/doc/egressctl/copyright is not debian/copyright"
	elif [ -n "$got" ]; then
		fail deb.copyright "lintian: $(tr '\n' ' ' <<<"$got")"
	else
		ok deb.copyright
	fi
}

# apt install ./the.deb on this machine: the installed binary, its man
# pages and completion work, a confined run exits 0; apt purge leaves no
# file of it, nor any file that was not there before the install.
test_apt() {
	local files f left out rc
	if ! is_root; then
		note "apt: needs root (skipped)"
		return
	fi
	[ -n "${DEB:-}" ] || { fail apt "no package built (test deb)"; return; }
	if dpkg-query -W -f='${Status}' egressctl 2>/dev/null | grep -q 'ok installed' ||
		[ -e /usr/bin/egressctl ]; then
		note "apt: egressctl is already installed on this machine: left alone (skipped)"
		return
	fi
	snapshot >"$W/before.lst"
	getent group egressctl >/dev/null || MADE_GROUP=1
	INSTALLED_PKG=1
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$DEB" \
		>"$W/apt.log" 2>&1; then
		fail apt.install "apt-get install $DEB failed: $(tail -5 "$W/apt.log")"
		return
	fi
	ok apt.install
	out=$(/usr/bin/egressctl --help 2>&1) && grep -q '^usage: egressctl' <<<"$out" &&
		ok apt.help || fail apt.help "/usr/bin/egressctl --help: $out"
	# the daemon's unit as systemd reads it (its binary and man pages installed)
	if command -v systemd-analyze >/dev/null; then
		out=$(systemd-analyze verify /lib/systemd/system/egressctl.service 2>&1) &&
			ok apt.unit_verifies || fail apt.unit_verifies "$out"
	fi
	for f in egressctl.1 egressctl-policy.5; do
		out=$(MANWIDTH=80 man --warnings -l "/usr/share/man/man${f##*.}/$f.gz" 2>&1 >"$W/$f.inst")
		if [ -z "$out" ] && grep -q "^NAME" "$W/$f.inst" &&
			[ "$(man -w "${f##*.}" "${f%.*}" 2>&1)" = "/usr/share/man/man${f##*.}/$f.gz" ]; then
			ok "apt.man.$f"
		else
			fail "apt.man.$f" "man: ${out:-$(man -w "${f##*.}" "${f%.*}" 2>&1)}"
		fi
	done
	a_set apt.completion "$(commands)" \
		"$(PATH=/usr/bin:$PATH COMP_FILE=/usr/share/bash-completion/completions/egressctl bash_complete 'egressctl ')"
	out=$(/usr/bin/egressctl check --policy /usr/share/doc/egressctl/examples/policy.json github.com 2>&1) &&
		ok apt.example_policy || fail apt.example_policy "$out"
	# the package's binary reads /etc's configuration, which it installed
	/usr/bin/egressctl daemon --help 2>&1 | tr -s ' \n' ' ' | grep -q 'default /etc/egressctl/daemon.json' &&
		ok apt.baked_paths || fail apt.baked_paths "$(/usr/bin/egressctl daemon --help 2>&1 | grep -A1 default | tr '\n' ' ')"
	# the policy the unit's daemon.json names: there, and it denies everything
	out=$(/usr/bin/egressctl check --policy /etc/egressctl/policy.json example.com 2>&1)
	rc=$?
	[ $rc = 1 ] && [ "$out" = "deny: example.com:443 — no rule allows it" ] && ok apt.default_policy ||
		fail apt.default_policy "check --policy /etc/egressctl/policy.json example.com: exit $rc: $out"
	apt_ci
	out=$(logrotate -d -s "$W/logrotate.state" /etc/logrotate.d/egressctl 2>&1) &&
		! grep -qi 'error' <<<"$out" && ok apt.logrotate_parses ||
		fail apt.logrotate_parses "logrotate -d /etc/logrotate.d/egressctl: $(grep -i error <<<"$out" | head -3)"
	apt_init
	apt_users
	# as `sudo egressctl run ...` from nobody; true opens no socket
	out=$(SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody timeout -k 5 60 \
		/usr/bin/egressctl run --allow example.test -- true 2>&1)
	rc=$?
	[ $rc = 0 ] && ok apt.run || fail apt.run "exit $rc: $out"
	files=$(dpkg -L egressctl)
	if ! DEBIAN_FRONTEND=noninteractive apt-get purge -y -q egressctl >"$W/purge.log" 2>&1; then
		fail apt.purge "apt-get purge egressctl failed: $(tail -5 "$W/purge.log")"
		return
	fi
	INSTALLED_PKG=
	# the group stays at purge, as system groups do (files may name it);
	# the suite's own is removed before the count of what was left
	getent group egressctl >/dev/null && ok apt.group_kept || fail apt.group_kept "purge removed the group"
	if [ -n "$MADE_GROUP" ]; then
		groupdel egressctl && MADE_GROUP=
	fi
	left=
	for f in $files; do
		if [ -e "$f" ] && { [ ! -d "$f" ] || [[ $f == *egressctl* ]]; }; then
			left="$left $f"
		fi
	done
	snapshot >"$W/after.lst"
	left="$left$(comm -13 "$W/before.lst" "$W/after.lst" | sed 's/^/ /' | tr -d '\n')"
	if dpkg-query -W -f='${Status}' egressctl 2>/dev/null | grep -q 'ok installed'; then
		fail apt.purge "egressctl is still installed"
	elif [ -n "$left" ]; then
		fail apt.purge "left:$left"
	else
		ok apt.purge
	fi
}

# run without sudo as the package sets it up: postinst made the system
# group egressctl; the daemon as egressctl-users.service starts it (its
# ExecStart= as installed, in a mount namespace with a /run of its own)
# serves /run/egressctl-user.sock, mode 0660, group egressctl, with the
# installed /etc/egressctl/users.json; and the README's first example,
# typed without sudo by a member of the group (a user the test adds to it
# and removes), runs its CMD as that user, in a cgroup of the service's
# (CMD opens no socket: nothing is sent)
apt_users() {
	local cmd out gid uid u=egrpk$$
	gid=$(getent group egressctl | cut -d: -f3)
	[ -n "$gid" ] && [ "$gid" -lt 1000 ] && ok apt.users.group ||
		fail apt.users.group "no system group egressctl: $(getent group egressctl)"
	if command -v systemd-analyze >/dev/null; then
		out=$(systemd-analyze verify /lib/systemd/system/egressctl-users.service 2>&1) &&
			ok apt.users.unit_verifies || fail apt.users.unit_verifies "$out"
	fi
	useradd -M -N -g nogroup -G egressctl -s /bin/sh "$u" || { fail apt.users.member "useradd failed"; return; }
	uid=$(id -u "$u")
	cmd=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/egressctl-users.service)
	out=$(unshare --mount --propagation private sh -c '
		mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
		mkdir -m 0700 /run/egressctl
		'"$cmd"' 2>/run/d.err & d=$!
		for n in $(seq 100); do [ -S /run/egressctl-user.sock ] && break; sleep 0.1; done
		stat -c "%a %G" /run/egressctl-user.sock 2>&1
		cd /tmp && timeout -k 5 60 setpriv --reuid='"$u"' --regid=nogroup --init-groups \
			env -i PATH=/usr/bin:/bin egressctl run --allow github.com \
			--allow "*.githubusercontent.com" --allow tcp://github.com:22 -- \
			sh -c "echo uid=\$(id -u) \$(grep ^0:: /proc/self/cgroup)" 2>/run/u.err
		echo "rc=$?"
		kill $d; wait $d
		grep -m1 -i "user socket\|users.json\|error" /run/d.err
		cat /run/u.err' 2>&1)
	userdel "$u" 2>/dev/null
	[ "$(head -1 <<<"$out")" = "660 egressctl" ] && ok apt.users.socket ||
		fail apt.users.socket "$cmd: $(tr '\n' '|' <<<"$out")"
	grep -qx "uid=$uid 0::/egressctl/run-[0-9]*" <<<"$out" &&
		grep -qx "rc=0" <<<"$out" && ok apt.users.readme_example_without_sudo ||
		fail apt.users.readme_example_without_sudo "$(tr '\n' '|' <<<"$out")"
}

# The CI integration where the package put it (/usr/share/egressctl/ci):
# each script finds its library (and the action its runner-hosts.rules) and
# gets as far as looking for its CI system's process, which is not here.
apt_ci() {
	local d=/usr/share/egressctl/ci out want bad=
	out=$("$d/gitlab/egressctl.sh" 2>&1)
	want="usage: $d/gitlab/egressctl.sh start|finish"
	[ "$out" = "$want" ] || bad="$bad gitlab/egressctl.sh: '$out', want '$want';"
	out=$("$d/buildkite/hooks/pre-command" 2>&1)
	want="egressctl-ci: no buildkite-agent up this hook's parent chain"
	[ "$out" = "$want" ] || bad="$bad buildkite/hooks/pre-command: '$out', want '$want';"
	out=$(env -u GITHUB_STATE -u GITHUB_OUTPUT "$d/github/main.sh" 2>&1)
	want="::error::egressctl: no Runner.Worker process up this step's parent chain (a container job, or not a GitHub runner)"
	[ "$out" = "$want" ] || bad="$bad github/main.sh: '$out', want '$want';"
	[ -z "$bad" ] && ok apt.ci_scripts || fail apt.ci_scripts "$bad"
}

# The init script of machines without systemd (init-functions runs it as it
# is where PID 1 is not systemd), in a private mount namespace whose /run
# and /var/log are empty tmpfs: start waits until the daemon is ready
# (daemon.json's unit, actions.runner.service, does not exist here: the
# daemon waits for it), its pid file names /usr/bin/egressctl, status is 0,
# a second start leaves it be, reload is a reload, logrotate's snippet
# rotates daemon.log and its postrotate leaves the daemon running, stop
# ends it and removes the pid file, status is then 3; a start whose daemon
# fails (a daemon.json that does not parse) exits 1 with the daemon's
# words and no pid file. The reopening of a decision log on the
# postrotate's signal: service.sh.
apt_init() {
	local out
	if [ -d /run/systemd/system ]; then
		note "apt.init: systemd runs here, init-functions hands the script to systemctl (skipped)"
		return
	fi
	cat >"$W/init.sh" <<-'EOF'
		set -u
		mount -t tmpfs -o mode=0755 tmpfs /run && mount -t tmpfs -o mode=0755 tmpfs /var/log || exit 1
		# at exit, whatever runs the installed egressctl in this mount
		# namespace (a pid file that went missing is no excuse), by pid
		mine() {
			for p in /proc/[0-9]*; do
				[ "$(readlink "$p/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ] &&
					[ "$(readlink "$p/exe")" = /usr/bin/egressctl ] && echo "${p#/proc/}"
			done
		}
		trap 'for p in $(mine); do kill "$p"; done' EXIT
		i=/etc/init.d/egressctl
		$i start >/dev/null 2>&1; echo "start $?"
		pid=$(cat /run/egressctl/daemon.pid 2>/dev/null)
		echo "exe $(readlink "/proc/${pid:-0}/exe")"
		grep -c 'egressctl: ready: 1 target; control socket /run/egressctl/control' /var/log/egressctl/daemon.log
		$i status >/dev/null 2>&1; echo "status $?"
		$i start >/dev/null 2>&1; echo "start $?"
		echo "same $([ "$(cat /run/egressctl/daemon.pid)" = "$pid" ] && echo yes)"
		$i reload >/dev/null 2>&1; echo "reload $?"
		for n in $(seq 100); do grep -q 'egressctl: reloaded' /var/log/egressctl/daemon.log && break; sleep 0.1; done
		grep -c 'egressctl: reloaded' /var/log/egressctl/daemon.log
		echo '{}' >/var/log/egressctl/x.jsonl
		logrotate -f -s "$1/lr.state" /etc/logrotate.d/egressctl; echo "logrotate $?"
		echo rotated $(ls /var/log/egressctl)
		sleep 0.5
		echo "alive $(kill -0 "$pid" 2>/dev/null && echo yes)"
		$i stop >/dev/null 2>&1; echo "stop $?"
		# gone, or a zombie its new parent (PID 1, which may not reap) left
		echo "gone $({ [ ! -e "/proc/$pid" ] || grep -q '^State:.*Z' "/proc/$pid/status"; } && echo yes) $([ -e /run/egressctl/daemon.pid ] || echo nopid)"
		$i status >/dev/null 2>&1; echo "status $?"
		# a start that fails (a daemon.json that does not parse) exits 1,
		# says why, and leaves no pid file
		echo '{' >/run/bad.json && mount --bind /run/bad.json /etc/egressctl/daemon.json
		$i start >/dev/null 2>"$1/init.err"; echo "bad start $?"
		grep -q 'daemon.json' "$1/init.err" && echo "said why"
		echo "pid file $([ -e /run/egressctl/daemon.pid ] && echo left || echo none)"
	EOF
	out=$(unshare -m --propagation private bash "$W/init.sh" "$W" 2>&1)
	local want="start 0
exe /usr/bin/egressctl
1
status 0
start 0
same yes
reload 0
1
logrotate 0
rotated daemon.log daemon.log.1.gz x.jsonl.1
alive yes
stop 0
gone yes nopid
status 3
bad start 1
said why
pid file none"
	if [ "$out" = "$want" ]; then ok apt.init_script; else
		fail apt.init_script "got: $(tr '\n' '|' <<<"$out"), want: $(tr '\n' '|' <<<"$want")"
	fi
}

# snapshot: the files and directories of the system's trees, less apt's and
# dpkg's own state, sorted (what a package may leave behind).
snapshot() {
	find /etc /usr /opt /var/lib /srv -xdev \
		\( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/systemd \) -prune \
		-o -print 2>/dev/null | LC_ALL=C sort
}

# ------------------------------------------------------------------- main

if [ $# -lt 1 ]; then
	echo "usage: $0 EGRESSCTL_PATH" >&2
	exit 2
fi
EGR=$(realpath -m "$1")
OUT=$(dirname "$EGR")
trap cleanup EXIT
trap 'interrupted INT 130' INT
trap 'interrupted TERM 143' TERM
trap 'interrupted HUP 129' HUP
mkdir -p "$W"
missing_tools=
for tool in make scdoc man dpkg-buildpackage dh lintian logrotate "$PY" unshare; do
	command -v "$tool" >/dev/null || missing_tools="$missing_tools $tool"
done
[ -f /usr/share/bash-completion/bash_completion ] || missing_tools="$missing_tools bash-completion"
if [ -n "$missing_tools" ]; then
	fail setup "missing tools:$missing_tools (tools/install-deps.sh)"
elif [ ! -x "$EGR" ]; then
	fail setup "$EGR is not executable"
else
	for t in ${E2E_TESTS:-$ALL_TESTS}; do
		t0=$(date +%s%N)
		"test_$t"
		t1=$(date +%s%N)
		printf '# %s: %d.%03d s\n' "$t" $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000))
	done
fi
echo "$PASS passed, $FAILED failed"
[ "$FAILED" = 0 ]
