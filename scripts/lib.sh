# Sourced by the scripts in this directory.

# ROOT_MODULE is the root module's path; the others are ROOT_MODULE/<dir>.
ROOT_MODULE=github.com/shedlock-go/shedlock

# PUBLISHED are the directories of the published modules, each after the
# modules it requires: a release tidies and tags them in this order.
PUBLISHED=(. shedlockredis shedlocketcd shedlockk8s shedlockprom shedlockotel shedlockgocron shedlockhttp cmd/shedlock)

# LIBRARIES are the published modules a service imports (not the command).
LIBRARIES=(. shedlockredis shedlocketcd shedlockk8s shedlockprom shedlockotel shedlockgocron shedlockhttp)

# module_path DIR prints the path of the module in DIR.
module_path() {
	if [ "$1" = . ]; then echo "$ROOT_MODULE"; else echo "$ROOT_MODULE/${1#./}"; fi
}

# required_version DIR PATH prints the version the module in DIR requires PATH at.
required_version() {
	awk -v p="$2" '($1 == p) { print $2 } ($1 == "require" && $2 == p) { print $3 }' "$1/go.mod" | head -n1
}

# release_version prints the version the modules require each other at.
release_version() {
	required_version shedlockredis "$ROOT_MODULE"
}

# clone_work_tree DEST clones the repository into DEST, with its tags, and
# commits there the work tree as it is (changes and new files included,
# ignored files left out), so that a check sees what is on disk.
clone_work_tree() {
	local dest=$1 root
	root=$(git rev-parse --show-toplevel)
	git clone -q "$root" "$dest"
	(
		cd "$dest"
		git rm -rq --cached . >/dev/null
		find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	)
	(
		cd "$root"
		git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf - | tar -C "$dest" -xf -
	)
	(
		cd "$dest"
		export GIT_AUTHOR_NAME=check GIT_AUTHOR_EMAIL=check@localhost
		export GIT_COMMITTER_NAME=check GIT_COMMITTER_EMAIL=check@localhost
		git add -A
		git commit -q --allow-empty -m "the work tree"
	)
}

# oldest_go DIR prints the oldest Go release the go line of DIR's module
# allows: go 1.24 and go 1.24.0 are both go1.24.0.
oldest_go() {
	local v
	v=$(awk '$1 == "go" { print $2; exit }' "$1/go.mod")
	case $v in
	*.*.*) echo "go$v" ;;
	*) echo "go$v.0" ;;
	esac
}
