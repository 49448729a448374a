#!/usr/bin/env bash
# Prints the version of this checkout as shell assignments (HANGAR_VERSION, HANGAR_COMMIT,
# HANGAR_TREE_STATE, HANGAR_BUILD_DATE) and, with --ldflags, the -ldflags that stamp them into
# a binary (pkg/version). Releases are named in hack/releases with their commits, since a
# clone (CI's) may lack the tags: the checkout at a release's commit is that release; a later
# one is the release it descends from plus its distance and commit, as `git describe` prints
# (v0.1.0-12-g1a2b3c4d); an unreleased history counts from v0.0.0. Uncommitted changes add
# -dirty. The build date is the commit's, so a rebuild of a commit is the same binary.
#
# HANGAR_RELEASE_VERSION names the build instead: a release is built from its own commit, whose
# hack/releases cannot name it yet (hack/test-install.sh builds the previous release so).
#
# Usage: eval "$(hack/version.sh)"; go build -ldflags "$(hack/version.sh --ldflags)" ...
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

commit=$(git rev-parse HEAD)
version=""
base="v0.0.0"
base_commit=""
# The newest release whose commit this checkout contains.
while read -r name release_commit; do
	[[ -z ${name} || ${name} == \#* ]] && continue
	if git merge-base --is-ancestor "${release_commit}" HEAD 2>/dev/null; then
		base=${name}
		base_commit=${release_commit}
	fi
done < hack/releases
if [[ -n ${base_commit} && $(git rev-parse "${base_commit}") == "${commit}" ]]; then
	version=${base}
else
	if [[ -n ${base_commit} ]]; then
		distance=$(git rev-list --count "${base_commit}..HEAD")
	else
		distance=$(git rev-list --count HEAD)
	fi
	version="${base}-${distance}-g${commit:0:8}"
fi
tree_state=clean
if ! git diff --quiet HEAD -- 2>/dev/null; then
	tree_state=dirty
	version+="-dirty"
fi
if [[ -n ${HANGAR_RELEASE_VERSION:-} ]]; then
	version=${HANGAR_RELEASE_VERSION}
fi
build_date=$(TZ=UTC git show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)

if [[ ${1:-} == --ldflags ]]; then
	pkg=github.com/hangarvm/hangar/pkg/version
	echo "-X ${pkg}.gitVersion=${version} -X ${pkg}.gitCommit=${commit} -X ${pkg}.gitTreeState=${tree_state} -X ${pkg}.buildDate=${build_date}"
	exit 0
fi
echo "HANGAR_VERSION=${version}"
echo "HANGAR_COMMIT=${commit}"
echo "HANGAR_TREE_STATE=${tree_state}"
echo "HANGAR_BUILD_DATE=${build_date}"
