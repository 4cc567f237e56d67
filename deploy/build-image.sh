#!/bin/sh
# build-image.sh - the jobscope OCI image, from the Debian package, with no registry.
#
#   deploy/build-image.sh [--out FILE] [--suite SUITE] [--mirror M]... DEB...
#
# DEB: the jobscope .deb that `dpkg-buildpackage -us -uc -b` made (and any
# other local .deb to install beside it).  mmdebstrap lays a Debian root
# (variant essential: no apt, no shell tools beyond the essential set) from
# Debian's archive with the package and what it depends on, plus libcurl4
# (the agent's stream to its head), libbpf1 (its task iterator) and
# ca-certificates (an https:// head);
# podman turns that root into the image localhost/jobscope:VERSION (VERSION:
# the package's) with `jobscope` as its entrypoint, and saves it as an OCI
# archive (default: jobscope-VERSION.oci.tar here) for
#   ctr -n k8s.io images import jobscope-VERSION.oci.tar     (each node)
#   podman load -i jobscope-VERSION.oci.tar
# The manifests in deploy/kubernetes name that image with imagePullPolicy:
# Never.  The suite defaults to this machine's (the package was built against
# its libraries); the mirrors to this machine's apt sources.
#
# podman keeps the image in its store (CONTAINERS_STORAGE_CONF and
# CONTAINERS_CONF choose another, as tests/integration/test_k8s_image.py does).
# Root only (mmdebstrap's root mode, podman's rootful store).
set -eu

out=
suite=
mirrors=
usage() {
	echo "usage: build-image.sh [--out FILE] [--suite SUITE] [--mirror M]... DEB..." >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--suite) [ $# -ge 2 ] || usage; suite=$2; shift 2 ;;
	--mirror) [ $# -ge 2 ] || usage; mirrors="$mirrors
$2"; shift 2 ;;
	-h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
for tool in mmdebstrap podman dpkg-deb; do
	command -v "$tool" >/dev/null || {
		echo "build-image.sh: $tool is not installed (apt-get install $tool)" >&2
		exit 1
	}
done

main_deb=
includes=
for deb in "$@"; do
	[ -f "$deb" ] || { echo "build-image.sh: no such package: $deb" >&2; exit 1; }
	deb=$(readlink -f "$deb")
	[ "$(dpkg-deb -f "$deb" Package)" = jobscope ] && main_deb=$deb
	includes="$includes --include=$deb"
done
[ -n "$main_deb" ] || { echo "build-image.sh: none of the packages is jobscope" >&2; exit 1; }
version=$(dpkg-deb -f "$main_deb" Version)
version=${version%%-*} # the upstream version: 0.1.0, as the manifests name it
image=localhost/jobscope:$version
[ -n "$out" ] || out=jobscope-$version.oci.tar

if [ -z "$suite" ]; then
	suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$suite" ] || { echo "build-image.sh: no VERSION_CODENAME in /etc/os-release: pass --suite" >&2; exit 1; }
fi
if [ -z "$mirrors" ]; then # this machine's sources, as apt uses them
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -s "$f" ] && mirrors="$mirrors
$f"
	done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/jobscope-image.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# the hook makes the local .deb files visible inside the root while dpkg runs
# there; apt's lists and caches are left out of the image (mmdebstrap's cleanup)
echo "build-image.sh: laying out $suite with $(basename "$main_deb")" >&2
# shellcheck disable=SC2086 # one --include per package, split on purpose
printf '%s\n' "$mirrors" | sed '/^$/d' | tr '\n' '\0' | xargs -0 \
	mmdebstrap --quiet --variant=essential --mode=root --format=tar \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--include=libcurl4,libbpf1,ca-certificates $includes \
	--customize-hook='mkdir -p "$1/var/lib/jobscope" "$1/host/proc" "$1/host/sys"' \
	--customize-hook='rm -rf "$1/usr/share/doc" "$1/usr/share/man" "$1/usr/share/info" "$1/usr/share/locale"' \
	"$suite" "$work/rootfs.tar"

echo "build-image.sh: $image" >&2
podman import --quiet \
	--change 'ENTRYPOINT ["/usr/bin/jobscope"]' \
	--change 'CMD ["agent", "--help"]' \
	--change 'WORKDIR /var/lib/jobscope' \
	--change "LABEL org.opencontainers.image.title=jobscope org.opencontainers.image.version=$version" \
	"$work/rootfs.tar" "$image" >/dev/null
rm -f "$out"
podman save --quiet --format oci-archive -o "$out" "$image"
echo "build-image.sh: wrote $out ($image)" >&2
