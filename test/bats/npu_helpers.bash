# npu_helpers.bash — fake accelerator hosts: device nodes under a test
# directory (mknod as root; elsewhere links to host nodes that behave the
# same way), the fake npu-smi and libdcmi, a fake NVIDIA proc tree.
load launch_helpers

# npu_setup: a host with /dev/davinci0..7 (5 unopenable: "busy"), the
# management nodes, and the 8-chip 910B3 tables.
npu_setup() {
    launch_setup
    npu_host "$WORK"
}

# npu_host DIR: the fake host's device nodes under DIR/dev, and its tools.
npu_host() {
    DEV="$1/dev"
    mkdir -p "$DEV"
    chmod 755 "$DEV"
    for i in 0 1 2 3 4 6 7; do make_node "$DEV/davinci$i" ok; done
    make_node "$DEV/davinci5" busy
    for n in davinci_manager devmm_svm hisi_hdc; do make_node "$DEV/$n" ok; done
    export SBX_DEV_ROOT="$DEV"
    export SCIENCE_AGENT_NPU_SMI_PATH="$FIXTURES/fake-npu-smi"
    export FAKE_NPU_SMI_MODEL=910b3-8
    export FAKE_NPU_SMI_CONFIG="$1/npu-smi.conf"
    export SBX_DCMI_LIBRARY="$1/no-libdcmi.so"
    export SBX_ASCEND_INSTALL_INFO="$1/ascend_install.info"
    unset FAKE_NPU_SMI_FAIL FAKE_DCMI_CHIPS FAKE_DCMI_FAIL
}

# make_node PATH ok|busy: a character device that opens, or one whose open
# fails with ENXIO as a chip held elsewhere does (major 60 has no driver;
# unprivileged, /dev/tty without a controlling terminal does the same).
make_node() {
    if [ "$(id -u)" -eq 0 ]; then
        if [ "$2" = ok ]; then mknod -m 666 "$1" c 1 3; else mknod -m 666 "$1" c 60 7; fi
    else
        if [ "$2" = ok ]; then ln -s /dev/null "$1"; else ln -s /dev/tty "$1"; fi
    fi
}

# nvidia_setup: two GPUs (minors 0 and 3) in a fake proc tree, their nodes,
# the control nodes, and the fake nvidia-smi.
nvidia_setup() {
    # Within a suite whose setup() made the host already: the same one (a
    # second launch_setup would leave the first work directory behind).
    [ -n "${WORK:-}" ] && [ -d "$WORK/dev" ] || npu_setup
    PROC="$WORK/proc-nvidia"
    mkdir -p "$PROC/gpus/0000:07:00.0" "$PROC/gpus/0000:8a:00.0"
    printf 'Model: \t\t NVIDIA A100-SXM4-80GB\nBus Location: \t 0000:07:00.0\nDevice Minor: \t 0\n' \
        > "$PROC/gpus/0000:07:00.0/information"
    printf 'Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:8a:00.0\nDevice Minor: \t 3\n' \
        > "$PROC/gpus/0000:8a:00.0/information"
    make_node "$DEV/nvidia0" ok
    make_node "$DEV/nvidia3" ok
    for n in nvidiactl nvidia-uvm nvidia-uvm-tools; do make_node "$DEV/$n" ok; done
    export SBX_NVIDIA_PROC_ROOT="$PROC"
    export SBX_NVIDIA_SMI_PATH="$FIXTURES/fake-nvidia-smi"
}
