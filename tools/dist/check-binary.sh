#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/dist/check-binary.sh BINARY [GLIBC]: what `make dist` asks of the
# release binary before it is packed, one line on stderr for each thing
# wrong and exit 1: the shared libraries it needs (readelf -d, NEEDED) are
# glibc's only (libc, libm, libpthread, libdl, librt, the loader), and no
# symbol it takes from them (objdump -T) has a version above GLIBC (2.31):
# the binary then runs on any glibc from GLIBC on (Debian 11, Ubuntu
# 20.04, ...). On success it prints the highest version it needs.
set -eu
bin=${1:?usage: check-binary.sh BINARY [GLIBC]}
max=${2:-2.31}
bad=0

needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
for lib in $needed; do
	case $lib in
	libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-x86-64.so.2) ;;
	*)
		echo "check-binary: $bin needs $lib: only glibc's libraries may stay shared" >&2
		bad=1
		;;
	esac
done

# "(GLIBC_2.34) pthread_create" for each dynamic symbol with a version
versions=$(objdump -T "$bin" | sed -n 's/.*(GLIBC_\([0-9.]*\))[[:space:]]*\([^[:space:]]*\)$/\1 \2/p')
newer=$(printf '%s\n' "$versions" | while read -r v sym; do
	[ -n "$v" ] || continue
	[ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -1)" = "$max" ] || echo "$sym@GLIBC_$v"
done)
if [ -n "$newer" ]; then
	echo "check-binary: $bin needs glibc newer than $max: $(printf '%s' "$newer" | tr '\n' ' ')" \
		"(tools/dist/glibc-compat.c stands in for such functions)" >&2
	bad=1
fi
[ "$bad" = 0 ] || exit 1
highest=$(printf '%s\n' "$versions" | awk '{ print $1 }' | sort -V | tail -1)
echo "check-binary: $bin needs only glibc's libraries ($(printf '%s' "$needed" | tr '\n' ' ')), GLIBC_$highest at most"
