#!/bin/bash
#
# devstack/plugin.sh: install and configure nova-image-traits in devstack.
#
# Phases:
#
# stack install      install the package into nova's Python environment
# stack post-config  add ImageTraitsFilter to nova-scheduler's filters and
#                    write the [image_traits] options
# stack extra        restart the conductors as nova-image-traits-conductor,
#                    then check that the filter and the hook survived
#                    local.conf's post-config (see verify_nova_image_traits)
# unstack            nothing of our own to stop
# clean              nothing: devstack's clean.sh deletes nova's configuration
#
# NOTE(nova-image-traits): devstack starts the conductors in lib/nova
# (start_nova_conductor) with a hard-coded "$NOVA_BIN_DIR/nova-conductor"
# and offers plugins no hook to change that command. Rather than redefine
# devstack's functions, the "stack extra" phase, which runs after every
# service has started, stops each conductor service and starts it again
# under the same service name with nova-image-traits-conductor and the same
# configuration file. The systemd unit devstack writes for it then holds our
# command, so "systemctl restart devstack@<service>" keeps the hook, and
# devstack's own stop_nova (unstack.sh) stops it as usual.

# Save trace setting
_XTRACE_NOVA_IMAGE_TRAITS=$(set +o | grep xtrace)
set -o xtrace

NOVA_IMAGE_TRAITS_FILTER_NAME=ImageTraitsFilter
NOVA_IMAGE_TRAITS_FILTER_PATH=nova_image_traits.filters.image_traits_filter.ImageTraitsFilter
NOVA_IMAGE_TRAITS_NOVA_ALL_FILTERS=nova.scheduler.filters.all_filters
# nova's default [filter_scheduler] enabled_filters, used when nova.conf
# does not set the option, so that appending our filter keeps nova's.
NOVA_IMAGE_TRAITS_NOVA_DEFAULT_FILTERS=ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
NOVA_IMAGE_TRAITS_CONDUCTOR=nova-image-traits-conductor
# What nova-image-traits-conductor logs once the hook is installed.
NOVA_IMAGE_TRAITS_INSTALLED="nova-image-traits rebuild hook installed in nova-conductor"
# The paste filter, and the compute pipelines of api-paste.ini it goes in.
NOVA_IMAGE_TRAITS_PRECHECK_FILTER=image_traits_precheck
NOVA_IMAGE_TRAITS_PASTE_PIPELINES="openstack_compute_api_v21 openstack_compute_api_v21_legacy_v2_compatible"
# Seconds a restarted conductor has to log that the hook is installed.
NOVA_IMAGE_TRAITS_START_WAIT=${NOVA_IMAGE_TRAITS_START_WAIT:-60}


# _nova_image_traits_has WORD LIST... - is WORD one of the words of LIST?
function _nova_image_traits_has {
    local word=$1
    shift
    local w
    for w in "$@"; do
        if [[ "$w" == "$word" ]]; then
            return 0
        fi
    done
    return 1
}

# _nova_image_traits_conductor_confs - the configuration files of the
# conductors the hook runs in: nova.conf for the (super) conductor, and the
# cell conductors' files unless devstack runs a single conductor.
function _nova_image_traits_conductor_confs {
    echo "${NOVA_COND_CONF:-$NOVA_CONF}"
    if [[ "${CELLSV2_SETUP}" != "singleconductor" ]]; then
        local i
        for i in $(seq 1 ${NOVA_NUM_CELLS:-1}); do
            conductor_conf $i
        done
    fi
}

function install_nova_image_traits {
    setup_develop $NOVA_IMAGE_TRAITS_DIR
}

# configure_nova_image_traits_filter - make ImageTraitsFilter available and
# enabled in nova-scheduler without dropping any filter already configured.
function configure_nova_image_traits_filter {
    local available
    available=$(iniget_multiline $NOVA_CONF filter_scheduler available_filters)
    if [[ -z "$available" ]]; then
        # Setting available_filters at all replaces nova's default, so
        # keep that default first.
        iniadd $NOVA_CONF filter_scheduler available_filters $NOVA_IMAGE_TRAITS_NOVA_ALL_FILTERS
    fi
    # shellcheck disable=SC2086
    if ! _nova_image_traits_has $NOVA_IMAGE_TRAITS_FILTER_PATH $available; then
        iniadd $NOVA_CONF filter_scheduler available_filters $NOVA_IMAGE_TRAITS_FILTER_PATH
    fi

    local enabled
    enabled=$(iniget $NOVA_CONF filter_scheduler enabled_filters)
    enabled=${enabled// /}
    if [[ -z "$enabled" ]]; then
        enabled=$NOVA_IMAGE_TRAITS_NOVA_DEFAULT_FILTERS
    fi
    if [[ ",$enabled," != *",$NOVA_IMAGE_TRAITS_FILTER_NAME,"* ]]; then
        iniset $NOVA_CONF filter_scheduler enabled_filters "$enabled,$NOVA_IMAGE_TRAITS_FILTER_NAME"
    fi
}

# configure_nova_image_traits_options CONF - write [image_traits] to CONF
function configure_nova_image_traits_options {
    local conf=$1
    iniset $conf image_traits strategy "$NOVA_IMAGE_TRAITS_STRATEGY"
    iniset $conf image_traits fallback_strategy "$NOVA_IMAGE_TRAITS_FALLBACK"
    iniset $conf image_traits on_placement_error "$NOVA_IMAGE_TRAITS_ON_ERROR"
}

# _nova_image_traits_paste - nova's api-paste.ini
function _nova_image_traits_paste {
    echo "${NOVA_API_PASTE_INI:-$NOVA_CONF_DIR/api-paste.ini}"
}

# _nova_image_traits_pipeline_ok PASTE PIPELINE - does the keystone pipeline
# of the composite PIPELINE run the pre-check right after keystonecontext?
function _nova_image_traits_pipeline_ok {
    local line
    line=$(iniget "$1" "composite:$2" keystone)
    [[ " $line " == *" keystonecontext $NOVA_IMAGE_TRAITS_PRECHECK_FILTER "* ]]
}

# configure_nova_image_traits_precheck - put the nova-api pre-check after
# keystonecontext in each compute pipeline of nova's api-paste.ini, and
# define it. Each part is checked and repaired on its own, so that running
# it again mends a file that has the definition but lost a pipeline entry.
function configure_nova_image_traits_precheck {
    local paste
    paste=$(_nova_image_traits_paste)
    local pipeline
    local line
    for pipeline in $NOVA_IMAGE_TRAITS_PASTE_PIPELINES; do
        if _nova_image_traits_pipeline_ok "$paste" "$pipeline"; then
            continue
        fi
        line=$(iniget "$paste" "composite:$pipeline" keystone)
        if [[ " $line " != *" keystonecontext "* ]]; then
            die $LINENO "nova-image-traits: [composite:$pipeline] keystone in $paste has no keystonecontext to put $NOVA_IMAGE_TRAITS_PRECHECK_FILTER after"
        fi
        line=" $line "
        line=${line// $NOVA_IMAGE_TRAITS_PRECHECK_FILTER / }
        line=${line/ keystonecontext / keystonecontext $NOVA_IMAGE_TRAITS_PRECHECK_FILTER }
        line=${line# }
        iniset "$paste" "composite:$pipeline" keystone "${line% }"
    done
    if [[ "$(iniget "$paste" "filter:$NOVA_IMAGE_TRAITS_PRECHECK_FILTER" paste.filter_factory)" != "$NOVA_IMAGE_TRAITS_PRECHECK_FACTORY" ]]; then
        iniset "$paste" "filter:$NOVA_IMAGE_TRAITS_PRECHECK_FILTER" paste.filter_factory "$NOVA_IMAGE_TRAITS_PRECHECK_FACTORY"
    fi
    configure_nova_image_traits_options $NOVA_CONF
}

function configure_nova_image_traits {
    if is_service_enabled n-api && [[ "$NOVA_IMAGE_TRAITS_ENABLE_PRECHECK" == "True" ]]; then
        configure_nova_image_traits_precheck
    fi
    if is_service_enabled n-sch && [[ "$NOVA_IMAGE_TRAITS_ENABLE_FILTER" == "True" ]]; then
        configure_nova_image_traits_filter
        configure_nova_image_traits_options $NOVA_CONF
    fi
    if is_service_enabled n-cond n-super-cond && [[ "$NOVA_IMAGE_TRAITS_ENABLE_HOOK" == "True" ]]; then
        local conf
        for conf in $(_nova_image_traits_conductor_confs); do
            configure_nova_image_traits_options $conf
        done
    fi
}

# _nova_image_traits_restart SERVICE CONF - run a conductor service again
# as nova-image-traits-conductor
function _nova_image_traits_restart {
    local service=$1
    local conf=$2
    _NOVA_IMAGE_TRAITS_RESTARTED_AT=${_NOVA_IMAGE_TRAITS_RESTARTED_AT:-$(date '+%Y-%m-%d %H:%M:%S')}
    stop_process $service
    run_process $service "$NOVA_BIN_DIR/$NOVA_IMAGE_TRAITS_CONDUCTOR --config-file $conf"
}

# start_nova_image_traits_conductors - the conductors devstack started
# (lib/nova start_nova_conductor), started again with the rebuild hook
function start_nova_image_traits_conductors {
    if [[ "${CELLSV2_SETUP}" == "singleconductor" ]]; then
        if is_service_enabled n-cond; then
            _nova_image_traits_restart n-cond "${NOVA_COND_CONF:-$NOVA_CONF}"
        fi
        return
    fi
    # Rebuilds reach the super conductor, on the API-level message queue;
    # the cell conductors get the hook too, where it stays idle.
    if is_service_enabled n-super-cond; then
        _nova_image_traits_restart n-super-cond "${NOVA_COND_CONF:-$NOVA_CONF}"
    fi
    local i
    for i in $(seq 1 ${NOVA_NUM_CELLS:-1}); do
        if is_service_enabled n-cond-cell${i}; then
            _nova_image_traits_restart n-cond-cell${i} "$(conductor_conf $i)"
        fi
    done
}

# unstack_nova_image_traits - devstack's stop_nova stops the conductors,
# whatever command they run; the plugin has no process of its own.
function unstack_nova_image_traits {
    :
}

# clean_nova_image_traits - an honest no-op: devstack's clean.sh deletes
# $NOVA_CONF_DIR, with everything this plugin wrote there, right after the
# plugins' clean phase; the package stays in nova's environment like every
# other project devstack installed.
function clean_nova_image_traits {
    :
}

# _nova_image_traits_conductor_services - the conductor services the hook
# runs in, as devstack names them
function _nova_image_traits_conductor_services {
    if [[ "${CELLSV2_SETUP}" == "singleconductor" ]]; then
        if is_service_enabled n-cond; then
            echo n-cond
        fi
        return
    fi
    if is_service_enabled n-super-cond; then
        echo n-super-cond
    fi
    local i
    for i in $(seq 1 ${NOVA_NUM_CELLS:-1}); do
        if is_service_enabled n-cond-cell${i}; then
            echo n-cond-cell${i}
        fi
    done
}

# _nova_image_traits_hook_running SERVICE - is the unit active, and did the
# conductor it runs log that the hook is installed since the restart? A
# unit file that names nova-image-traits-conductor proves neither: the
# process may have exited, or (hook_on_unsupported_nova = run_nova_check)
# run nova's own check without the hook.
function _nova_image_traits_hook_running {
    local unit=devstack@$1.service
    local since=${_NOVA_IMAGE_TRAITS_RESTARTED_AT:-}
    local waited=0
    while true; do
        if [[ "$(systemctl is-active $unit)" == "active" ]] && journalctl --unit $unit --no-pager --output cat ${since:+--since "$since"} | grep -qF "$NOVA_IMAGE_TRAITS_INSTALLED"; then
            # Still up once it has logged it.
            [[ "$(systemctl is-active $unit)" == "active" ]]
            return
        fi
        if (( waited >= NOVA_IMAGE_TRAITS_START_WAIT )); then
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

# verify_nova_image_traits - fail loudly when the deployment lost what this
# plugin configured. devstack merges local.conf's post-config sections
# AFTER the plugins' post-config phase: a local.conf enabled_filters drops
# ImageTraitsFilter silently, and a local.conf available_filters leaves it
# enabled but not available, so that nova-scheduler refuses to start.
# "stack extra" runs after that merge, so it can check.
function verify_nova_image_traits {
    if is_service_enabled n-api && [[ "$NOVA_IMAGE_TRAITS_ENABLE_PRECHECK" == "True" ]]; then
        local paste
        paste=$(_nova_image_traits_paste)
        local pipeline
        for pipeline in $NOVA_IMAGE_TRAITS_PASTE_PIPELINES; do
            if ! _nova_image_traits_pipeline_ok "$paste" "$pipeline"; then
                die $LINENO "nova-image-traits: [composite:$pipeline] keystone in $paste has no $NOVA_IMAGE_TRAITS_PRECHECK_FILTER right after keystonecontext; set NOVA_IMAGE_TRAITS_ENABLE_PRECHECK=False or add it"
            fi
        done
        if [[ "$(iniget "$paste" "filter:$NOVA_IMAGE_TRAITS_PRECHECK_FILTER" paste.filter_factory)" != "$NOVA_IMAGE_TRAITS_PRECHECK_FACTORY" ]]; then
            die $LINENO "nova-image-traits: $paste does not define [filter:$NOVA_IMAGE_TRAITS_PRECHECK_FILTER] with paste.filter_factory = $NOVA_IMAGE_TRAITS_PRECHECK_FACTORY"
        fi
    fi
    if is_service_enabled n-sch && [[ "$NOVA_IMAGE_TRAITS_ENABLE_FILTER" == "True" ]]; then
        local available
        available=$(iniget_multiline $NOVA_CONF filter_scheduler available_filters)
        # shellcheck disable=SC2086
        if ! _nova_image_traits_has $NOVA_IMAGE_TRAITS_FILTER_PATH $available; then
            die $LINENO "nova-image-traits: [filter_scheduler] available_filters in $NOVA_CONF lacks $NOVA_IMAGE_TRAITS_FILTER_PATH (local.conf's post-config, merged after the plugin's, replaced it); add it there or set NOVA_IMAGE_TRAITS_ENABLE_FILTER=False"
        fi
        local enabled
        enabled=$(iniget $NOVA_CONF filter_scheduler enabled_filters)
        enabled=${enabled// /}
        if [[ ",$enabled," != *",$NOVA_IMAGE_TRAITS_FILTER_NAME,"* ]]; then
            die $LINENO "nova-image-traits: [filter_scheduler] enabled_filters in $NOVA_CONF lacks $NOVA_IMAGE_TRAITS_FILTER_NAME (local.conf's post-config, merged after the plugin's, replaced it); append it there or set NOVA_IMAGE_TRAITS_ENABLE_FILTER=False"
        fi
    fi
    if [[ "$NOVA_IMAGE_TRAITS_ENABLE_HOOK" == "True" ]]; then
        local service
        local command
        for service in $(_nova_image_traits_conductor_services); do
            command=$(iniget "$SYSTEMD_DIR/devstack@$service.service" Service ExecStart)
            if [[ "$command" != *"/$NOVA_IMAGE_TRAITS_CONDUCTOR "* ]]; then
                die $LINENO "nova-image-traits: $service runs '$command', not $NOVA_IMAGE_TRAITS_CONDUCTOR"
            fi
            if ! _nova_image_traits_hook_running $service; then
                die $LINENO "nova-image-traits: devstack@$service is $(systemctl is-active devstack@$service.service) and did not log '$NOVA_IMAGE_TRAITS_INSTALLED' within ${NOVA_IMAGE_TRAITS_START_WAIT}s of its restart; see journalctl -u devstack@$service"
            fi
        done
    fi
}


if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing nova-image-traits"
    install_nova_image_traits
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring nova-image-traits"
    configure_nova_image_traits
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    if [[ "$NOVA_IMAGE_TRAITS_ENABLE_HOOK" == "True" ]]; then
        echo_summary "Restarting nova-conductor with the nova-image-traits rebuild hook"
        start_nova_image_traits_conductors
    fi
    verify_nova_image_traits
fi

if [[ "$1" == "unstack" ]]; then
    unstack_nova_image_traits
fi

if [[ "$1" == "clean" ]]; then
    clean_nova_image_traits
fi

# Restore xtrace
$_XTRACE_NOVA_IMAGE_TRAITS
