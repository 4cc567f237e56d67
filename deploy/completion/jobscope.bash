# bash completion for jobscope: commands and each command's options, asked of
# jobscope itself (`jobscope --list-commands`, `jobscope CMD --list-options`, made
# from the commands' option tables), so it never drifts from the binary.
# Installed by `meson install` into share/bash-completion/completions/jobscope.
_jobscope()
{
	local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-v | --verbose) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} --list-commands 2>/dev/null) --help --version --verbose" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} "$cmd" --list-options 2>/dev/null)" -- "$cur"))
		[[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _jobscope jobscope
