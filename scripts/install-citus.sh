#!/usr/bin/env bash
# Build Citus 13.2.2 from the vendored source and install it into PostgreSQL 15, once.
#
# Cached: when PostgreSQL 15 already has citus.so and citus.control of this version, it
# does nothing. Citus is AGPL-3.0, so its source is never copied into this repository: it
# is read from the vendor directory, unpacked and built in a temporary directory, and only
# the installed extension stays on the machine (for the tests under tests/clusters/).
#
# The vendor directory is, in order: $AGENTCKPT_CITUS_SOURCE; <repo top>/../shared/vendor/
# citus (CI clones the project beside a copy of shared/); /work/shared/vendor/citus.
# Needs postgresql-server-dev-15 and the -dev libraries that .ci/run installs.
set -euo pipefail

CITUS_VERSION=13.2.2
TARBALL="citus-$CITUS_VERSION.tar.gz"
TARBALL_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
PATCH=pg15-have_createdb_privilege.patch
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

say() { echo "install-citus: $*" >&2; }

if [ ! -x "$PG_CONFIG" ]; then
    say "no $PG_CONFIG: PostgreSQL 15 is not installed"
    exit 1
fi
pkglibdir=$("$PG_CONFIG" --pkglibdir)
control="$("$PG_CONFIG" --sharedir)/extension/citus.control"

# citus.so carries "Citus <version>" in its citus_version() string; the control file alone
# only names the SQL version (13.2-1), which every 13.2.x shares.
if [ -f "$pkglibdir/citus.so" ] && [ -f "$control" ] \
    && grep -aq "Citus $CITUS_VERSION " "$pkglibdir/citus.so"; then
    say "Citus $CITUS_VERSION is already installed in $pkglibdir"
    exit 0
fi

repo_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source_dir=""
for candidate in "${AGENTCKPT_CITUS_SOURCE:-}" "$repo_top/../shared/vendor/citus" \
    /work/shared/vendor/citus; do
    if [ -n "$candidate" ] && [ -f "$candidate/$TARBALL" ]; then
        source_dir=$(cd "$candidate" && pwd)
        break
    fi
done
if [ -z "$source_dir" ]; then
    say "cannot find $TARBALL: set AGENTCKPT_CITUS_SOURCE to the directory holding it"
    exit 1
fi
if [ ! -f "$pkglibdir/pgxs/src/makefiles/pgxs.mk" ]; then
    say "PGXS is missing: apt-get install postgresql-server-dev-15"
    exit 1
fi

echo "$TARBALL_SHA256  $source_dir/$TARBALL" | sha256sum --check --quiet -

build=$(mktemp -d -t citus-build.XXXXXX)
trap 'rm -rf "$build"' EXIT
say "building Citus $CITUS_VERSION from $source_dir in $build"
started=$SECONDS
tar xzf "$source_dir/$TARBALL" -C "$build"
cd "$build/citus-$CITUS_VERSION"
patch -p1 --quiet < "$source_dir/$PATCH"
# The build log is long and only interesting when it fails.
if ! { ./configure PG_CONFIG="$PG_CONFIG" --without-libcurl \
    && make -j"$(nproc)" && make install; } >"$build/build.log" 2>&1; then
    tail -n 60 "$build/build.log" >&2
    say "build failed"
    exit 1
fi
if ! grep -aq "Citus $CITUS_VERSION " "$pkglibdir/citus.so"; then
    say "installed, but $pkglibdir/citus.so does not report Citus $CITUS_VERSION"
    exit 1
fi
say "installed Citus $CITUS_VERSION in $((SECONDS - started)) s"
