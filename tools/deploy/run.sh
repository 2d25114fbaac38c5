#!/bin/bash
# tools/deploy/run.sh: install nova-image-traits the way a deployer does
# and run it in a small real cloud on 127.0.0.1 (see deploy.py).
#
# 1. MariaDB, RabbitMQ and qemu-img (qemu-utils, for cinder's image
#    code) from Debian (apt-get; needs root).
# 2. The sdist and the wheel, built from a clean clone of this repository's
#    committed HEAD.
# 3. A fresh venv with the wheel (not editable) and the services of one
#    nova series, under that series' upper-constraints (constraints/).
# 4. deploy.py: start every service, rebuild servers with every strategy,
#    stop what it started.
#
# Environment:
#   NIT_DEPLOY_DIR   work directory (default: <repo>/.deploy); its logs/
#                    directory holds every service's log
#   NIT_DEPLOY_PORT  first of the ten loopback ports used (default 17300)
#   NIT_DEPLOY_SERIES  the nova series: 2026.2 (default; services on native
#                    threads) or 2025.1 (services under eventlet)
#
# With --load first (tox -e load-deploy), step 4 is load_run.py instead:
# the same cloud, and Rally's concurrent rebuilds (rally-jobs/), with
# Rally from a venv of its own ($BUILD/rally-venv, kept between runs);
# the other arguments go to load_run.py.
set -euo pipefail

LOAD=0
if [[ ${1:-} == --load ]]; then
    LOAD=1
    shift
fi

TOP=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${NIT_DEPLOY_DIR:-$TOP/.deploy}
BUILD=$WORK-build
SERIES=${NIT_DEPLOY_SERIES:-2026.2}
# The services of each series; the libraries come from its constraints.
case $SERIES in
    2025.1)
        PINS="nova>=31.0.0,<32 openstack-placement>=13.0.0,<13.1 keystone>=27.0.0,<28 glance>=30.0.0,<31 cinder>=26.0.0,<27"
        ;;
    2026.2)
        PINS="nova==34.0.0 openstack-placement==16.0.0 keystone==30.0.0 glance==33.0.0 cinder==29.0.0"
        ;;
    *)
        echo "NIT_DEPLOY_SERIES=$SERIES: the deployment job runs 2025.1 or 2026.2" >&2
        exit 2
        ;;
esac
CONSTRAINTS=$TOP/constraints/upper-constraints-$SERIES.txt
TOOLS="python-openstackclient osc-placement pymysql gunicorn tempest"
mkdir -p "$BUILD"
TIMES=$BUILD/timings.txt
: > "$TIMES"

function timed {
    local name=$1
    shift
    local start=$SECONDS
    echo "== $name"
    "$@"
    echo "$name $((SECONDS - start)) s" | tee -a "$TIMES"
}

function apt_install {
    # Two deployment jobs may start at once (.ci/run runs the oldest and
    # the newest series side by side): the first installs while the
    # second waits for the lock, then finds everything there.
    (
        flock 9
        if command -v mariadbd > /dev/null && [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] && command -v qemu-img > /dev/null; then
            echo "mariadb-server, rabbitmq-server and qemu-utils already installed"
            exit 0
        fi
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server rabbitmq-server qemu-utils
    ) 9> /tmp/nova-image-traits-deploy-apt.lock
}

function build_wheel {
    rm -rf "$BUILD/src" "$BUILD/dist" "$BUILD/buildenv"
    git clone --quiet "$TOP" "$BUILD/src"
    python3 -m venv "$BUILD/buildenv"
    "$BUILD/buildenv/bin/pip" install --quiet build
    "$BUILD/buildenv/bin/python" -m build --outdir "$BUILD/dist" "$BUILD/src" > "$BUILD/build.log"
}

function make_venv {
    rm -rf "$BUILD/venv"
    python3 -m venv "$BUILD/venv"
    local wheel
    wheel=$(ls "$BUILD"/dist/*.whl)
    # shellcheck disable=SC2086
    "$BUILD/venv/bin/pip" install --quiet -c "$CONSTRAINTS" \
        "$wheel" $PINS $TOOLS
    "$BUILD/venv/bin/pip" list --format=freeze > "$BUILD/pip-freeze.txt"
    grep -iE '^(nova|openstack-placement|keystone|glance|cinder|eventlet)==' "$BUILD/pip-freeze.txt"
}

# Rally and its OpenStack plugins, as measured to install here with
# Python 3.11; Rally's own dependencies are not the services'.
RALLY_PINS="rally-openstack==4.1.0 rally==5.1.1"

function make_rally_venv {
    if "$BUILD/rally-venv/bin/rally" --version > /dev/null 2>&1; then
        echo "Rally already installed in $BUILD/rally-venv"
        return
    fi
    rm -rf "$BUILD/rally-venv"
    python3 -m venv "$BUILD/rally-venv"
    # shellcheck disable=SC2086
    "$BUILD/rally-venv/bin/pip" install --quiet $RALLY_PINS
}

echo "== series $SERIES, constraints $CONSTRAINTS"
timed "apt-get install" apt_install
timed "build sdist and wheel" build_wheel
timed "venv with the wheel and the services" make_venv
# Run from outside the source tree, so that only the installed wheel can
# be imported.
cd "$BUILD"
if [[ $LOAD == 1 ]]; then
    timed "rally venv" make_rally_venv
    timed "load run" "$BUILD/venv/bin/python" "$TOP/tools/deploy/load_run.py" \
        --work "$WORK" --base-port "${NIT_DEPLOY_PORT:-17300}" \
        --rally "$BUILD/rally-venv/bin/rally" "$@"
    cat "$TIMES"
    exit 0
fi
timed "deployment and checks" "$BUILD/venv/bin/python" "$TOP/tools/deploy/deploy.py" \
    --work "$WORK" --base-port "${NIT_DEPLOY_PORT:-17300}" "$@"
cat "$TIMES"
