#!/bin/bash
#
# Recorded stand-ins for the devstack functions devstack/plugin.sh and
# devstack/settings call, for tests/unit/test_devstack.py.
#
# The ini functions really edit the file, with devstack's semantics
# (inc/ini-config):
#
# iniset FILE SECTION OPTION VALUE     set every OPTION line of SECTION to
#                                      VALUE, or add one after the section
#                                      header; add the section at the end
#                                      of the file if it is missing
# iniget FILE SECTION OPTION           print OPTION's value
# iniget_multiline FILE SECTION OPTION print all of OPTION's values,
#                                      separated by spaces
# iniset_multiline FILE SECTION OPTION VALUE...
#                                      replace OPTION's lines by one line
#                                      per VALUE, in order
# iniadd FILE SECTION OPTION VALUE...  append VALUEs to a multi-valued
#                                      OPTION (devstack does not check for
#                                      duplicates, and neither does this)
# inidelete FILE SECTION OPTION        delete OPTION's lines
#
# Every call is also appended to $STUB_LOG, one line per call, as the
# function name and its arguments separated by "|".

STUB_LOG=${STUB_LOG:-/dev/null}

function _stub_record {
    local IFS='|'
    echo "$*" >> "$STUB_LOG"
}

# _stub_ini MODE FILE SECTION OPTION - rewrite FILE; the values are read,
# one a line, from $_STUB_VALUES.
function _stub_ini {
    local mode=$1
    local file=$2
    local section=$3
    local option=$4
    local tmp
    [[ -f "$file" ]] || touch "$file"
    tmp=$(mktemp)
    _STUB_MODE=$mode _STUB_SECTION=$section _STUB_OPTION=$option \
        awk '
        function is_header(line) { return line ~ /^\[.*\][ \t]*$/ }
        function is_section(line,    h) {
            h = line; sub(/[ \t]*$/, "", h)
            return h == "[" sec "]"
        }
        function key(line,    k) {
            if (line !~ /^[^#;[][^=]*=/) return ""
            k = line; sub(/[ \t]*=.*/, "", k); return k
        }
        function put_values(    i) {
            for (i = 1; i <= nvalues; i++) print opt " = " values[i]
        }
        BEGIN {
            mode = ENVIRON["_STUB_MODE"]; sec = ENVIRON["_STUB_SECTION"]
            opt = ENVIRON["_STUB_OPTION"]
            nvalues = split(ENVIRON["_STUB_VALUES"], values, "\n")
            if (ENVIRON["_STUB_VALUES"] == "") nvalues = 0
        }
        # First pass: is the option in the section already?
        NR == FNR {
            if (is_header($0)) insec = is_section($0)
            else if (insec && key($0) == opt) present = 1
            next
        }
        FNR == 1 { insec = 0 }
        {
            if (is_header($0)) {
                insec = is_section($0)
                print
                if (insec) {
                    found = 1
                    if (mode == "multi" || (mode == "set" && !present))
                        put_values()
                }
                next
            }
            if (insec && key($0) == opt) {
                if (mode == "set") print opt " = " values[1]
                # "multi" and "delete" drop the old lines.
                next
            }
            print
        }
        END {
            if (!found && mode != "delete" && nvalues > 0) {
                print ""
                print "[" sec "]"
                put_values()
            }
        }
        ' "$file" "$file" > "$tmp"
    cat "$tmp" > "$file"
    rm -f "$tmp"
}

# _stub_values FILE SECTION OPTION - print the option's values, one a line
function _stub_values {
    local file=$1
    local section=$2
    local option=$3
    [[ -f "$file" ]] || return 0
    _STUB_SECTION=$section _STUB_OPTION=$option awk '
        BEGIN { sec = ENVIRON["_STUB_SECTION"]; opt = ENVIRON["_STUB_OPTION"] }
        /^\[.*\][ \t]*$/ {
            h = $0; sub(/[ \t]*$/, "", h)
            insec = (h == "[" sec "]")
            next
        }
        insec && $0 ~ /^[^#;[][^=]*=/ {
            k = $0; sub(/[ \t]*=.*/, "", k)
            if (k != opt) next
            v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
            print v
        }
    ' "$file"
}

function iniset {
    _stub_record iniset "$@"
    _STUB_VALUES=$4 _stub_ini set "$1" "$2" "$3"
}

function iniget {
    _stub_record iniget "$@"
    local line
    line=$(_stub_values "$1" "$2" "$3" | head -n 1)
    echo "$line"
}

function iniget_multiline {
    _stub_record iniget_multiline "$@"
    local values
    values=$(_stub_values "$1" "$2" "$3")
    echo $values
}

function iniset_multiline {
    _stub_record iniset_multiline "$@"
    local file=$1
    local section=$2
    local option=$3
    shift 3
    local IFS=$'\n'
    _STUB_VALUES="$*" _stub_ini multi "$file" "$section" "$option"
}

function iniadd {
    _stub_record iniadd "$@"
    local file=$1
    local section=$2
    local option=$3
    shift 3
    local values
    values=$(_stub_values "$file" "$section" "$option")
    local IFS=$'\n'
    if [[ -n "$values" ]]; then
        _STUB_VALUES="$values"$'\n'"$*" _stub_ini multi "$file" "$section" "$option"
    else
        _STUB_VALUES="$*" _stub_ini multi "$file" "$section" "$option"
    fi
}

function inidelete {
    _stub_record inidelete "$@"
    _STUB_VALUES="" _stub_ini delete "$1" "$2" "$3"
}

# is_service_enabled SERVICE... - true if any SERVICE is in the
# comma-separated $ENABLED_SERVICES
function is_service_enabled {
    local s
    for s in "$@"; do
        if [[ ",${ENABLED_SERVICES}," == *",$s,"* ]]; then
            return 0
        fi
    done
    return 1
}

# trueorfalse DEFAULT VARNAME - devstack's boolean normalisation
function trueorfalse {
    local default=$1
    local value=${!2:-$default}
    case "$value" in
        1|[yY]|[yY]es|YES|[tT]rue|TRUE|[oO]n|ON) echo True ;;
        0|[nN]|[nN]o|NO|[fF]alse|FALSE|[oO]ff|OFF) echo False ;;
        *) echo "$default" ;;
    esac
}

function conductor_conf {
    echo "${NOVA_CONF_DIR}/nova_cell${1}.conf"
}

function die {
    _stub_record die "$@"
    echo "die: $*" >&2
    exit 1
}

function echo_summary {
    echo "$@"
}

function define_plugin { _stub_record define_plugin "$@"; }
function plugin_requires { _stub_record plugin_requires "$@"; }
function setup_develop { _stub_record setup_develop "$@"; }
function setup_install { _stub_record setup_install "$@"; }
function pip_install { _stub_record pip_install "$@"; }
function enable_python3_package { _stub_record enable_python3_package "$@"; }
function enable_service { _stub_record enable_service "$@"; }
# run_process SERVICE COMMAND - as devstack under systemd, write the unit's
# ExecStart (when SYSTEMD_DIR is set)
# and, for nova-image-traits-conductor, the journal line its launcher logs
# once the hook is installed (unless STUB_HOOK_INSTALLS=False)
function run_process {
    _stub_record run_process "$@"
    if [[ -n "${SYSTEMD_DIR:-}" ]]; then
        mkdir -p "$SYSTEMD_DIR"
        printf '[Service]\nExecStart = %s\n' "$2" > "$SYSTEMD_DIR/devstack@$1.service"
        if [[ "$2" == *nova-image-traits-conductor* && "${STUB_HOOK_INSTALLS:-True}" == "True" ]]; then
            echo "INFO nova_image_traits.conductor.hook [-] nova-image-traits rebuild hook installed in nova-conductor (nova 34.0.0)." >> "$SYSTEMD_DIR/devstack@$1.service.journal"
        fi
    fi
}
function stop_process { _stub_record stop_process "$@"; }
function restart_service { _stub_record restart_service "$@"; }

# systemctl is-active UNIT - the contents of $SYSTEMD_DIR/UNIT.state when a
# test wrote one, else "active" when the unit file exists, else "inactive"
function systemctl {
    _stub_record systemctl "$@"
    if [[ "$1" == "is-active" ]]; then
        if [[ -f "$SYSTEMD_DIR/$2.state" ]]; then
            cat "$SYSTEMD_DIR/$2.state"
        elif [[ -f "$SYSTEMD_DIR/$2" ]]; then
            echo active
        else
            echo inactive
        fi
    fi
}

# journalctl --unit UNIT ... - the contents of $SYSTEMD_DIR/UNIT.journal
function journalctl {
    _stub_record journalctl "$@"
    cat "$SYSTEMD_DIR/$2.journal" 2>/dev/null || true
}
