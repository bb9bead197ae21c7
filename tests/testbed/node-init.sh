#!/bin/bash
# Runs as the first process of a testbed node, already inside the node's own
# network namespace (ip netns exec) and its own mount + UTS namespaces
# (unshare --mount --uts --propagation private). Mounts the node's overlays
# and then becomes the node's sshd (or, for persona templates, runs a command).
#
#   node-init.sh NODE_DIR sshd
#   node-init.sh NODE_DIR run COMMAND [ARGS...]
#
# NODE_DIR holds upper/<name> and work/<name> for each overlaid directory and,
# for nodes, tmp/ (the node's /tmp), hostname and, when the node's persona has
# a software stack, template (the stack's directory: its upper/<name> become an
# extra read-only layer between the host directory and the node's own layer).
set -euo pipefail

node_dir=$1
mode=$2
shift 2

# name:mount point pairs; /root covers pyenv's interpreter and site-packages;
# /usr/lib/x86_64-linux-gnu takes what Debian packages install there (cuDNN).
overlays=(etc:/etc usr_local:/usr/local opt:/opt root:/root var:/var
          usr_lib:/usr/lib/x86_64-linux-gnu)

template=""
if [ -s "${node_dir}/template" ]; then
    template=$(cat "${node_dir}/template")
fi

for pair in "${overlays[@]}"; do
    name=${pair%%:*}
    target=${pair#*:}
    lower=${target}
    if [ -n "${template}" ] && [ -d "${template}/upper/${name}" ]; then
        lower="${template}/upper/${name}:${target}"
    fi
    mount -t overlay "testbed-${name}" \
        -o "lowerdir=${lower},upperdir=${node_dir}/upper/${name},workdir=${node_dir}/work/${name}" \
        "${target}"
done

if [ "${mode}" = "run" ]; then
    exec "$@"
fi

# /proc/driver/nvidia/version as a real path, backed by the node's /etc copy.
if [ -d /etc/testbed/proc-driver ]; then
    mount --bind /etc/testbed/proc-driver /proc/driver
fi
mount -t tmpfs -o size=16m,mode=755 testbed-run /run
mkdir -p /run/sshd
chmod 755 /run/sshd
hostname "$(cat "${node_dir}/hostname")"
# Last: NODE_DIR itself may live under /tmp.
mount --bind "${node_dir}/tmp" /tmp
exec /usr/sbin/sshd -D -e -f /etc/testbed/ssh/sshd_config
