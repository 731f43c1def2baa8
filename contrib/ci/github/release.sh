# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The GitHub Action's egressctl when none is given, built or installed:
# the release tarball (`make dist`) that contrib/ci/SHA256SUMS at this
# action's ref names, downloaded from the binary-url input's pattern (by
# default this repository's GitHub release of that version), its SHA-256
# checked against that file, unpacked in $RUNNER_TEMP. A download that
# fails or does not match fails the step, with why: nothing is built
# instead (build: true builds, and only then).
#
#   . contrib/ci/github/release.sh
#   egr_gh_release || exit 1     # EGR_GH_BIN: the binary's path
#
# (Not a path on stdout: the ::error:: lines must reach the runner.)
#
# Settings (environment): EGR_BINARY_URL (the pattern: {repository},
# {ref}, {version}, {file} replaced), EGR_SUMS (the checksums file;
# default the one beside this action's scripts), GITHUB_ACTION_REPOSITORY
# and GITHUB_ACTION_REF (the runner's: the action's repository and ref).

EGR_GH_RELEASE_URL='https://github.com/{repository}/releases/download/v{version}/{file}'

egr_gh_error() { echo "::error::egressctl: $*"; }

# egr_gh_sum: "SHA256 FILE" of the release tarball SHA256SUMS names (its
# first such line; '#' lines are comments)
egr_gh_sum() {
	grep -E '^[0-9a-f]{64}  egressctl-[A-Za-z0-9.+~_-]+-linux-amd64\.tar\.gz$' "$1" 2>/dev/null |
		head -1 | sed 's/  / /'
}

# egr_gh_url PATTERN FILE VERSION: PATTERN with its placeholders replaced
egr_gh_url() {
	local url=$1
	url=${url//\{repository\}/${GITHUB_ACTION_REPOSITORY:-}}
	url=${url//\{ref\}/${GITHUB_ACTION_REF:-}}
	url=${url//\{version\}/$3}
	url=${url//\{file\}/$2}
	echo "$url"
}

egr_gh_release() {
	local sums=${EGR_SUMS:-$(dirname "${BASH_SOURCE[0]}")/../SHA256SUMS} pattern line sum file
	local version url dir got err
	pattern=${EGR_BINARY_URL:-$EGR_GH_RELEASE_URL}
	line=$(egr_gh_sum "$sums")
	if [ -z "$line" ]; then
		egr_gh_error "contrib/ci/SHA256SUMS at this action's ref (${GITHUB_ACTION_REF:-?}) names no release tarball, so there is nothing to download: use a release's tag, or build: true to build egressctl from the action's checkout"
		return 1
	fi
	sum=${line%% *}
	file=${line#* }
	version=${file#egressctl-}
	version=${version%-linux-amd64.tar.gz}
	if [ "$(uname -m)" != x86_64 ]; then
		egr_gh_error "the release tarball is for x86-64 (linux-amd64), this runner is $(uname -m): build: true builds egressctl here"
		return 1
	fi
	case $pattern in *'{repository}'*) if [ -z "${GITHUB_ACTION_REPOSITORY:-}" ]; then
		egr_gh_error "binary-url $pattern names {repository}, and the runner did not say which (GITHUB_ACTION_REPOSITORY; a local action?): give binary-url a URL of its own, or build: true"
		return 1
	fi ;;
	esac
	url=$(egr_gh_url "$pattern" "$file" "$version")
	dir=${RUNNER_TEMP:-/tmp}/egressctl-release
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	echo "egressctl: downloading $file from $url" >&2
	if ! err=$(curl -fsSL --retry 3 --connect-timeout 20 --max-time 300 -o "$dir/$file" "$url" 2>&1); then
		egr_gh_error "cannot download $url: ${err:-curl failed} (binary-url: a mirror; build: true: build it)"
		return 1
	fi
	got=$(sha256sum "$dir/$file" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		rm -f "$dir/$file"
		egr_gh_error "$url is not the release this action's ref names: its SHA-256 is $got, contrib/ci/SHA256SUMS says $sum for $file; refused, and nothing built instead (a tampered download, or a mirror serving another file)"
		return 1
	fi
	if ! err=$(tar -xzf "$dir/$file" -C "$dir" "${file%.tar.gz}/bin/egressctl" 2>&1); then
		egr_gh_error "$file: no bin/egressctl in it: $err"
		return 1
	fi
	echo "egressctl: $file, SHA-256 $sum as contrib/ci/SHA256SUMS says" >&2
	EGR_GH_BIN=$dir/${file%.tar.gz}/bin/egressctl
}
