# bash completion for cachepin(8).  Self-contained (no bash-completion helpers), so
# that `source completion/cachepin.bash` works alone; installed as
# <prefix>/share/bash-completion/completions/cachepin, which bash-completion loads
# on the first <TAB> after `cachepin`.  The options are those of `cachepin COMMAND
# --help` (hook/cmd_*.c); tests/install/completion.sh checks they agree.

_cachepin ()
{
  local cur=${COMP_WORDS[COMP_CWORD]} prev=
  [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="plan hook apply release nri status why metrics dra measure"
  local request="--cpus --align --smt --mode --strict --isolate"
  COMPREPLY=()

  if [ "$COMP_CWORD" -le 1 ]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return 0
  fi

  # The value of an option.
  case $prev in
    --align) COMPREPLY=($(compgen -W "llc l2 numa package none" -- "$cur")); return 0 ;;
    --smt) COMPREPLY=($(compgen -W "pe0-first pe0 cores any" -- "$cur")); return 0 ;;
    --mode) COMPREPLY=($(compgen -W "exclusive shared" -- "$cur")); return 0 ;;
    --mems) COMPREPLY=($(compgen -W "local keep" -- "$cur")); return 0 ;;
    --topology)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -W "host" -- "$cur") $(compgen -f -- "$cur"))
      return 0 ;;
    --config)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0 ;;
    --socket | --output | --kube-ca | --kube-token-file)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0 ;;
    --name | --idx | --node | --generation | --dra-node | --kube-api) return 0 ;;
    --unit)
      # The services systemd knows (none offered where systemctl is missing).
      COMPREPLY=($(compgen -W "$(systemctl list-units --all --type=service --plain --no-legend 2>/dev/null |
        awk '{ print $1 }')" -- "$cur"))
      return 0 ;;
    --cgroup)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -d -- "${cur:-/sys/fs/cgroup/}"))
      return 0 ;;
    --kubelet-root)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -d -- "${cur:-/var/lib/kubelet}"))
      return 0 ;;
    --cpus | --allowed | --occupied | --rounds | --seconds) return 0 ;; # a number or a cpulist: nothing to offer
  esac

  local words
  case ${COMP_WORDS[1]} in
    plan) words="$request --topology --config --empty --allowed --occupied --json --help" ;;
    hook) words="--config --help createRuntime prestart poststop" ;;
    apply) words="--cgroup --unit --runtime --mems --name --config --dry-run --json $request --help" ;;
    release) words="--cgroup --unit --config --help" ;;
    nri) words="--socket --name --idx --metrics-listen --metrics-path --kubelet-plugin --kubelet-root --dra-node --kube-api --kube-ca --kube-token-file --config --help" ;;
    status) words="--json --wide --config --help" ;;
    why) words="--json --config --help" ;;
    metrics) words="--output --config --help" ;;
    dra) words="slice prepare unprepare publish unpublish --node --topology --config --empty --generation --claim --claim-uid --kube-api --kube-ca --kube-token-file --json --help" ;;
    measure) words="--cpus --align --smt --mode --strict --rounds --seconds --config --json --help" ;;
    *) return 0 ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  return 0
}
complete -F _cachepin cachepin
