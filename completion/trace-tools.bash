# bash completion for tracekit: trace-ingest, trace-analyze, trace-export, trace-record.
#
# Nothing here lists an option or a value: the options come from the tool's own
# --help, and the values of an option (sort keys, kinds, reports, lists, formats,
# units, metrics) from the "(valid: ...)" list the tool prints for an unknown
# value, so completion always matches the installed version.  Both are asked
# once per shell and kept.

declare -gA _tracekit_cache 2>/dev/null || true

# _tracekit_opts TOOL: the tool's options, from its --help
_tracekit_opts()
{
    local key="$1 opts"
    if [[ -z ${_tracekit_cache[$key]+set} ]]; then
        _tracekit_cache[$key]=$("$1" --help 2>/dev/null |
            grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ ,]*//' | sort -u | tr '\n' ' ')
    fi
    printf '%s' "${_tracekit_cache[$key]}"
}

# _tracekit_takes_arg TOOL OPT: does OPT take a value ("--sort KEY", "-o, --output FILE")?
_tracekit_takes_arg()
{
    local key="$1 args"
    if [[ -z ${_tracekit_cache[$key]+set} ]]; then
        _tracekit_cache[$key]=" $("$1" --help 2>/dev/null |
            grep -oE -- '(-[a-zA-Z], )?--[a-zA-Z][a-zA-Z0-9-]* [A-Z]' |
            sed -E 's/ [A-Z]$//; s/, / /' | tr '\n' ' ') "
    fi
    [[ ${_tracekit_cache[$key]} == *" $2 "* ]]
}

# _tracekit_values TOOL OPT: the values the tool accepts for OPT, or nothing
# (files, numbers and free text).  The tool is asked with a value it cannot
# know and no input, so it stops at the option with a usage error.
_tracekit_values()
{
    local key="$1 $2"
    [[ $1 == trace-record ]] && return   # it would run the program
    case $2 in -o|--output|--title|--include|--exclude|--time-range) return ;; esac
    if [[ -z ${_tracekit_cache[$key]+set} ]]; then
        _tracekit_cache[$key]=$("$1" "$2" '?' /nonexistent/tracekit-completion 2>&1 >/dev/null |
            sed -n 's/.*(valid: \(.*\))$/\1/p' | head -n 1)
    fi
    printf '%s' "${_tracekit_cache[$key]}"
}

_tracekit()
{
    local tool=$1 cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion -n =, || return
    else
        cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
    fi
    tool=${words[0]}

    # trace-record: after the program, complete the program's own arguments
    if [[ $tool == *trace-record ]]; then
        local i
        for ((i = 1; i < cword; i++)); do
            case ${words[i]} in
                --) ((i++)); break ;;
                -*) _tracekit_takes_arg "$tool" "${words[i]}" && ((i++)) ;;
                *) break ;;
            esac
        done
        if ((i < cword)) && declare -F _command_offset >/dev/null; then
            _command_offset "$i"
            return
        fi
    fi

    local opt=$prev value=$cur
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*} value=${cur#*=}
    fi
    if [[ $opt == -* ]] && _tracekit_takes_arg "$tool" "$opt"; then
        local vals
        vals=$(_tracekit_values "$tool" "$opt")
        if [[ -n $vals ]]; then
            # comma lists (--kind ops,kernels): complete the last item
            local done_part=
            [[ $value == *,* ]] && done_part=${value%,*},
            COMPREPLY=($(compgen -P "$done_part" -W "$vals" -- "${value##*,}"))
            [[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *,* ]] && compopt -o nospace 2>/dev/null
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$value"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_tracekit_opts "$tool")" -- "$cur"))
        return
    fi
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}

complete -F _tracekit trace-ingest trace-analyze trace-export trace-record
