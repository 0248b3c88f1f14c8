# bash completion for every sbx program: options and commands are read from
# the program's own --help (once per shell), so they never drift from it.
# Install: copy to /usr/share/bash-completion/completions/sbx and link each
# program's name to it, or source it from ~/.bashrc.

declare -gA _sbx_words

# _sbx_words_of PROGRAM [COMMAND]: the long options and commands --help lists.
_sbx_words_of() {
    local key="$1 ${2:-}"
    if [ -z "${_sbx_words[$key]+set}" ]; then
        local help
        help=$("$1" ${2:+"$2"} --help 2>/dev/null)
        _sbx_words[$key]="$(printf '%s\n' "$help" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ')"
        # Commands: the first bare word after the program on the usage lines.
        _sbx_words[$key]+=" $(printf '%s\n' "$help" | sed -n 's/^\(Usage:\)\{0,1\} *'"$1"' \(\[[^]]*\] *\)*\([a-z][a-z-]*\).*/\3/p' | sort -u | tr '\n' ' ')"
        # ... and the alternatives of a "a | b | c" usage.
        _sbx_words[$key]+=" $(printf '%s\n' "$help" | sed -n '/^Usage:/,/^$/p' | grep -o '| [a-z][a-z-]*' | cut -c3- | sort -u | tr '\n' ' ')"
    fi
    printf '%s' "${_sbx_words[$key]}"
}

_sbx() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} prog=${COMP_WORDS[0]} cmd="" w
    case $prev in
    *-dir | --dev-root | --proc-root | --root | --toolkit)
        COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --config | --capabilities | --policy | --log | --socket | --npu-smi | --nvidia-smi | --dcmi | --bwrap)
        COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    # sbx-egress takes a command first, and its own --help then counts.
    for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
        case $w in -*) ;; *) cmd=$w; break ;; esac
    done
    if [ "$prog" = sbx-egress ] && [ -n "$cmd" ]; then
        COMPREPLY=($(compgen -W "$(_sbx_words_of "$prog" "$cmd")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_sbx_words_of "$prog")" -- "$cur"))
    fi
    [ ${#COMPREPLY[@]} -gt 0 ] || COMPREPLY=($(compgen -f -- "$cur"))
}

complete -F _sbx sbx-probe sbx-launch sbx-run sbx-quota sbx-snap sbx-report sbx-egress sbx-egress-bridge \
    sbx-npu sbx-broker sbx-env sbx-ws sbx-skills sbx-httpd
