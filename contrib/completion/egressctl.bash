# bash completion for egressctl(1)                         -*- shell-script -*-
# SPDX-License-Identifier: Apache-2.0
#
# Nothing here lists a command or an option: they are read at completion
# time from `egressctl help` and `egressctl COMMAND --help` of the very
# binary being completed, so a new option completes the day it is added.
# An option's argument is completed by the word its --help shows for it:
# FILE completes files, USER users, NAME|PATH of --cgroup the cgroups under
# <cgroup2 mount>/egressctl/ (the mount read from /proc/self/mountinfo).

# The commands of `egressctl help`: the lines under "commands:".
_egressctl_commands()
{
    "$1" help 2>/dev/null | awk '
        /^[^ ]/ { on = /^commands:/; next }
        on && /^  +[a-z]/ { print $1 }'
}

# The options of `egressctl COMMAND --help`, one per line as "OPTION ARG"
# (ARG the word shown after it, such as FILE, or "-" when it takes none),
# from the usage lines ("[--policy FILE]", "[-j|--json]") and the heads of
# the option lines ("  -q, --quiet", "  --allow RULE"), never from prose.
_egressctl_options()
{
    "$1" "$2" --help 2>&1 | awk '
        function take(s, prose,    tok, rest, n, f) {
            s = " " s
            while (match(s, /[ [|(,]--?[A-Za-z][A-Za-z0-9-]*( [A-Z][A-Z0-9_|]*)?/)) {
                tok = substr(s, RSTART + 1, RLENGTH - 1)
                rest = substr(s, RSTART + RLENGTH)
                s = rest
                n = split(tok, f, " ")
                if (prose && f[1] !~ /^--/ && rest !~ /^(,|\||\])/)
                    continue        # "-k:" is no option
                if (!(f[1] in arg)) { order[++count] = f[1]; arg[f[1]] = "-" }
                if (n > 1 && arg[f[1]] == "-") arg[f[1]] = f[2]
            }
        }
        /^usage:/ { usage = 1 }
        usage && /^[ \t]*$/ { usage = 0 }
        usage { take($0, 1); next }
        match($0, /^ *-/) && RLENGTH <= 7 {
            head = $0
            sub(/^ +/, "", head)
            sub(/  .*/, "", head)
            take(head, 0)
        }
        END { for (i = 1; i <= count; i++) print order[i], arg[order[i]] }'
}

# The cgroup2 mount point: the first cgroup2 mount of /proc/self/mountinfo
# that is not hidden under a later mount.
_egressctl_cgroup2()
{
    local mnt
    while IFS= read -r mnt; do
        mnt=$(printf '%b' "${mnt//\\/\\0}")     # mountinfo's \040 escapes
        if [[ $(stat -f -c %T -- "$mnt" 2>/dev/null) == cgroup2fs ]]; then
            printf '%s\n' "$mnt"
            return 0
        fi
    done < <(awk '{
        for (i = 7; i <= NF; i++)
            if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break }
    }' /proc/self/mountinfo 2>/dev/null)
    return 1
}

# --cgroup: a path below the mount when the word starts with '/', else the
# names of the directories under <cgroup2 mount>/egressctl/.
_egressctl_cgroups()
{
    local cur=$1 mnt d
    local -a names=()
    if [[ $cur == /* ]]; then
        _filedir -d
        return
    fi
    mnt=$(_egressctl_cgroup2) || return
    for d in "$mnt"/egressctl/*/; do
        [[ -d $d ]] || continue
        d=${d%/}
        names+=("${d##*/}")
    done
    COMPREPLY=($(compgen -W '"${names[@]}"' -- "$cur"))
}

_egressctl()
{
    local cur prev words cword split
    _init_completion -s -n : || return

    local egr=${words[0]} cmd i w opt
    [[ $egr == "~"* ]] && egr=${egr/#\~/$HOME}
    type -P "$egr" >/dev/null 2>&1 || egr=egressctl

    if ((cword == 1)); then
        COMPREPLY=($(compgen -W "$(_egressctl_commands "$egr")" -- "$cur"))
        return
    fi
    cmd=${words[1]}
    if [[ $cmd == help ]]; then
        ((cword == 2)) &&
            COMPREPLY=($(compgen -W "$(_egressctl_commands "$egr")" -- "$cur"))
        return
    fi

    local -A takes=()
    local -a opts=()
    while read -r opt w; do
        [[ -n $opt ]] || continue
        opts+=("$opt")
        [[ $w != - ]] && takes[$opt]=$w
    done < <(_egressctl_options "$egr" "$cmd")
    ((${#opts[@]})) || return

    # run, sudo: the first word that is neither an option nor an option's
    # argument (or the word after "--") starts CMD.
    if [[ $cmd == run || $cmd == sudo ]]; then
        for ((i = 2; i < cword; i++)); do
            w=${words[i]}
            if [[ $w == -- ]]; then
                _command_offset $((i + 1))
                return
            elif [[ $w == --*=* ]]; then
                continue
            elif [[ $w == -* ]]; then
                [[ -n ${takes[$w]-} ]] && ((i++))
            else
                _command_offset "$i"
                return
            fi
        done
        if [[ $cur != -* && -z ${takes[$prev]-} ]]; then
            _command_offset "$cword"
            return
        fi
    fi

    if [[ -n ${takes[$prev]-} ]]; then
        case $prev:${takes[$prev]} in
        --cgroup:*) _egressctl_cgroups "$cur" ;;
        --method:*)
            COMPREPLY=($(compgen -W 'GET HEAD POST PUT DELETE PATCH OPTIONS
                CONNECT TRACE' -- "${cur^^}"))
            ;;
        *:FILE | *:PATH) _filedir ;;
        *:USER) COMPREPLY=($(compgen -u -- "$cur")) ;;
        esac
        return
    fi
    $split && return

    if [[ $cur == -* || $cmd == status ]]; then
        COMPREPLY=($(compgen -W '"${opts[@]}"' -- "$cur"))
    fi
}
complete -F _egressctl egressctl
