#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make spdx-check` (run by make check): every source file names its licence
# in an SPDX line within its first three lines (after a shebang, #compdef,
# an editor modeline or scdoc's preamble line), and the licence is the one
# debian/copyright gives its path: GPL-2.0-only OR BSD-2-Clause for what the
# BPF objects are built from (bpf/, tests/bpf/*.bpf.c, include/egress_abi.h),
# Apache-2.0 for the rest. The BPF objects' license sections must say
# "Dual BSD/GPL". Source files: C and headers, shell (by name or shebang),
# Python, JS, Go, Java, Makefile, debian/rules, YAML, the systemd unit
# template, the completion scripts, the man pages' sources. vmlinux/
# (generated) and the fuzz corpora and dictionaries (data) are not.
#   tools/spdx-check.sh [DIR]    DIR: the tree (default: this script's)
# Prints one line per offending file and exits 1 if there is one.
set -u

BPF_ID="GPL-2.0-only OR BSD-2-Clause"
APACHE_ID="Apache-2.0"

cd "${1:-$(dirname "$0")/..}" || exit 2

# the tree's files: git's (tracked, and new ones not ignored) in a checkout,
# else every file outside the build directories
list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files --cached --others --exclude-standard
	else
		find . -type f ! -path './.git/*' ! -path './build*' ! -path './debian/build/*' \
			! -path './debian/egressctl/*' | sed 's|^\./||'
	fi
}

# is_source PATH: a file of a kind that carries an SPDX line
is_source() {
	case $1 in
	vmlinux/* | tests/fuzz/corpus/*) return 1 ;;
	*.c | *.h | *.sh | *.bash | *.py | *.js | *.go | *.java | *.yml | *.yaml | *.scd | \
		*.service.in | Makefile | debian/rules | contrib/completion/* | .clang-format)
		return 0 ;;
	esac
	head -c 2 "$1" 2>/dev/null | grep -q '^#!'
}

# expected PATH: the licence debian/copyright gives PATH
expected() {
	case $1 in
	bpf/* | tests/bpf/*.bpf.c | include/egress_abi.h) echo "$BPF_ID" ;;
	*) echo "$APACHE_ID" ;;
	esac
}

# problems: one line per file without its SPDX line, with another licence,
# or (a BPF object's source) with another license section
problems() {
	list_files | while IFS= read -r f; do
		if [ ! -f "$f" ] || ! is_source "$f"; then continue; fi
		want=$(expected "$f")
		got=$(head -n 3 "$f" | sed -n 's@^\(//\|#\|;\) SPDX-License-Identifier: \(.*\)$@\2@p' | head -n 1)
		if [ -z "$got" ]; then
			echo "$f: no SPDX-License-Identifier line in its first 3 lines (want: $want)"
		elif [ "$got" != "$want" ]; then
			echo "$f: SPDX-License-Identifier: $got, but debian/copyright says $want"
		fi
		case $f in bpf/*.c | tests/bpf/*.c) ;; *) continue ;; esac
		sed -n 's/.*SEC("license") = "\([^"]*\)".*/\1/p' "$f" | while IFS= read -r l; do
			[ "$l" = "Dual BSD/GPL" ] ||
				echo "$f: license section \"$l\", expected \"Dual BSD/GPL\" (its SPDX line's)"
		done
	done
}

n=$(list_files | while IFS= read -r f; do [ -f "$f" ] && is_source "$f" && echo; done | wc -l)
if [ "$n" = 0 ]; then
	echo "spdx-check: no source file found in $(pwd)"
	exit 1
fi
out=$(problems)
if [ -n "$out" ]; then
	echo "$out"
	echo "spdx-check: $(echo "$out" | wc -l) finding(s) in $n source files"
	exit 1
fi
echo "spdx-check: $n source files, each with its SPDX line"
