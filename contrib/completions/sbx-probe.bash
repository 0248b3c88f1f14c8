# bash completion for sbx-probe(1)
_sbx_probe() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case $prev in
    --bwrap) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --cache-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --timeout-ms) return ;;
    esac
    COMPREPLY=($(compgen -W '--bwrap --cache-dir --no-cache --refresh --timeout-ms --help --version' -- "$cur"))
}
complete -F _sbx_probe sbx-probe
