# Sourced by scripts/test.sh and scripts/demo.sh: adds gVisor's runsc to the Debian
# packages they install (the array `need`) where it is missing or older than 20240729.
# Debian 12's own runsc (20221219) has only the ptrace platform on a machine without KVM,
# where a bot's system call costs tens of µs; bookworm-backports' (20240729) defaults to
# systrap, a few µs (docs/security.md). On Debian 12 (bookworm) the
# backports suite of Debian's own mirror is added to apt's sources first, once, unless
# apt already has it; elsewhere the distribution's runsc is installed when none is here.
# (APT_ETC and OS_RELEASE stand for /etc/apt and /etc/os-release in tests/test_runsc_script.py.)
RUNSC_WANTED=20240729
apt_etc=${APT_ETC:-/etc/apt}
runsc_date=$(runsc --version 2>/dev/null | grep -o '20[0-9]\{6\}' | head -n1 || true)
if [ "${runsc_date:-0}" -lt "$RUNSC_WANTED" ]; then
  if grep -qs '^VERSION_CODENAME=bookworm$' "${OS_RELEASE:-/etc/os-release}"; then
    if ! grep -qsE '^[^#]*bookworm-backports' "$apt_etc/sources.list" \
        "$apt_etc"/sources.list.d/*.list "$apt_etc"/sources.list.d/*.sources; then
      echo "adding Debian's bookworm-backports to apt's sources (gVisor's runsc $RUNSC_WANTED)" >&2
      printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' \
        'Suites: bookworm-backports' 'Components: main' \
        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
        | $([ -w "$apt_etc/sources.list.d" ] || echo sudo) tee "$apt_etc/sources.list.d/bookworm-backports.sources" >/dev/null
    fi
    need+=(runsc/bookworm-backports)
  elif [ -z "$runsc_date" ]; then
    need+=(runsc)
  fi
fi
