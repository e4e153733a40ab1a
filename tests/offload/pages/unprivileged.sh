#!/bin/sh
# Runs "$@" as an ordinary user: page faults must be served for users who
# cannot use userfaultfd (CI runs as root, cluster users do not).  As
# root: as nobody, with HOME where nobody may write.  Otherwise: as is.
if [ "$(id -u)" = 0 ]; then
    exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp "$@"
fi
exec "$@"
