#!/usr/bin/env bats
# sbx-npu against fake hosts: npu-smi tables (910B3, dual-die 910C, each
# failure), DCMI through a fake libdcmi.so, NVIDIA through a fake proc tree;
# probes in real sandboxes; fragments bound into real launches; sbx-run
# refusing an execution whose chip is busy.

load npu_helpers

setup() {
    npu_setup
}

teardown() {
    launch_teardown
}

dev() { jq -c --argjson i "$1" '.devices[] | select(.hostIndex == $i)' <<<"$output"; }

@test "list from npu-smi: logic ids, readings, Mcu rows skipped, each chip probed in a sandbox" {
    run --separate-stderr sbx-npu list --refresh
    assert_success
    assert_equal "$(jq_out '.supported, .source, (.devices | length)' | tr '\n' ' ')" "true npu-smi 8 "
    run jq -r '[.hostIndex, .cardId, .chipId, .chipName, .health, .busId, .aiCorePercent, .hbmUsedMB, .hbmTotalMB, .powerW, .temperatureC, .sandboxUsable] | @tsv' <<<"$(dev 4)"
    assert_output $'4\t4\t0\t910B3\tOK\t0000:81:00.0\t4\t3104\t65536\t96\t42\ttrue'
    # The busy chip: the reason is the first line that is not driver noise.
    run jq -r '.sandboxUsable, .sandboxUnusableReason' <<<"$(sbx-npu list | jq -c '.devices[] | select(.hostIndex == 5)')"
    assert_output $'false\nNPU 5 cannot be opened inside the sandbox: dcmi model initialized failed, because the device is used. ret is -8020'
    assert_equal "$(sbx-npu list | jq '[.devices[] | select(.sandboxUsable)] | length')" 7
}

@test "dual-die 910C: both dies of a card are separate chips named by logic id" {
    export FAKE_NPU_SMI_MODEL=910c
    run --separate-stderr sbx-npu list --refresh
    assert_success
    run jq -r '.devices[] | [.hostIndex, .cardId, .chipId, .chipName, .busId] | @tsv' <<<"$output"
    assert_output $'0\t0\t0\t910C\t0000:9D:00.0\n1\t0\t1\t910C\t0000:9F:00.0\n2\t1\t0\t910C\t0000:1D:00.0\n3\t1\t1\t910C\t0000:1F:00.0'
}

@test "the listing is cached 60 s; --refresh reads again; failures are never cached" {
    run --separate-stderr sbx-npu list --refresh
    assert_equal "$(jq_out '.devices | length')" 8
    export FAKE_NPU_SMI_MODEL=910c
    assert_equal "$(sbx-npu list | jq '.devices | length')" 8
    assert_equal "$(sbx-npu list --refresh | jq '.devices | length')" 4
    export FAKE_NPU_SMI_FAIL=exit
    run --separate-stderr sbx-npu list --refresh
    assert_success
    assert_equal "$(jq_out '.supported, (.devices | length), .error' | tr '\n' '|')" "true|0|Could not read NPU status: npu-smi: internal error|"
    unset FAKE_NPU_SMI_FAIL
    assert_equal "$(sbx-npu list | jq '.devices | length')" 4
}

@test "npu-smi failures: busy (noise skipped), no output, a non-zero exit; no npu-smi at all" {
    for mode in busy empty exit; do
        FAKE_NPU_SMI_FAIL=$mode run --separate-stderr sbx-npu list --refresh
        assert_success
        assert_equal "$(jq_out '.supported')" true
        assert_equal "$(jq_out '.devices | length')" 0
        case $mode in
        busy) assert_equal "$(jq_out .error)" "Could not read NPU status: dcmi model initialized failed, because the device is used. ret is -8020" ;;
        empty) assert_equal "$(jq_out .error)" "Could not read NPU status: npu-smi info printed nothing" ;;
        exit) assert_equal "$(jq_out .error)" "Could not read NPU status: npu-smi: internal error" ;;
        esac
    done
    SCIENCE_AGENT_NPU_SMI_PATH="$WORK/none" run --separate-stderr sbx-npu --npu-smi "" list --refresh
    assert_success
    assert_equal "$(jq -c '[.supported, .devices]' <<<"$output")" '[false,[]]'
}

@test "DCMI first: chips by logic id, MCUs skipped, readings, a non-910 chip refused by name" {
    export SBX_DCMI_LIBRARY="$SBX_BIN/test/libdcmi.so"
    export FAKE_DCMI_CHIPS="3:0:4:910B3:0;3:1:-:Mcu:0;7:0:6:910B3:1;9:0:7:310P3:0"
    run --separate-stderr sbx-npu list --refresh
    assert_success
    assert_equal "$(jq_out .source)" dcmi
    run jq -r '.devices[] | [.hostIndex, .cardId, .chipId, .chipName, .health, .busId, .aiCorePercent, .hbmUsedMB, .hbmTotalMB, .powerW, .temperatureC, .sandboxUsable] | @tsv' <<<"$output"
    assert_output $'4\t3\t0\t910B3\tOK\t0000:84:00.0\t40\t3004\t65536\t90.9\t44\ttrue\n6\t7\t0\t910B3\tAlarm\t0000:86:00.0\t60\t3006\t65536\t91.1\t46\ttrue\n7\t9\t0\t310P3\tOK\t0000:87:00.0\t70\t3007\t65536\t91.2\t47\tfalse'
    assert_equal "$(sbx-npu list | jq -r '.devices[2].sandboxUnusableReason')" 'Only Ascend 910 series chips are supported; this one reports "310P3".'
    # A DCMI that fails to start hands over to npu-smi.
    FAKE_DCMI_FAIL=init run --separate-stderr sbx-npu list --refresh
    assert_equal "$(jq_out '.source, (.devices | length)' | tr '\n' ' ')" "npu-smi 8 "
}

@test "probe --chip: usable, busy, missing node, missing chip" {
    run --separate-stderr sbx-npu probe --chip 4
    assert_success
    assert_equal "$output" '{"hostIndex":4,"sandboxUsable":true}'
    run --separate-stderr sbx-npu probe --chip 5
    assert_failure 3
    assert_equal "$(jq_out .sandboxUnusableReason)" "NPU 5 cannot be opened inside the sandbox: dcmi model initialized failed, because the device is used. ret is -8020"
    rm "$DEV/davinci7"
    run --separate-stderr sbx-npu probe --chip 7
    assert_failure 3
    assert_equal "$(jq_out .sandboxUnusableReason)" "$DEV/davinci7 does not exist on this machine."
    run --separate-stderr sbx-npu probe --chip 12
    assert_equal "$(jq_out .sandboxUnusableReason)" "NPU 12 is no longer present on this machine."
    SCIENCE_AGENT_NPU_SMI_PATH="$WORK/none" run --separate-stderr sbx-npu --npu-smi "" probe --chip 4
    assert_equal "$(jq_out .sandboxUnusableReason)" "This machine reports no Ascend NPU cards, so NPU 4 cannot be selected."
}

@test "fragment --chips 6,4: renumbered binds, management nodes, CANN env; a real sandbox sees exactly those" {
    touch "$SBX_ASCEND_INSTALL_INFO"
    run --separate-stderr sbx-npu --toolkit /opt/tk fragment --chips 6,4,6
    assert_success
    frag=$output
    run jq -c '.devices.nodes' <<<"$frag"
    assert_output "[{\"host\":\"$DEV/davinci4\",\"sandbox\":\"/dev/davinci0\"},{\"host\":\"$DEV/davinci6\",\"sandbox\":\"/dev/davinci1\"},{\"host\":\"$DEV/davinci_manager\",\"sandbox\":\"/dev/davinci_manager\"},{\"host\":\"$DEV/devmm_svm\",\"sandbox\":\"/dev/devmm_svm\"},{\"host\":\"$DEV/hisi_hdc\",\"sandbox\":\"/dev/hisi_hdc\"}]"
    assert_equal "$(jq -r '.devices.env.LD_LIBRARY_PATH' <<<"$frag")" \
        "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver:/opt/tk/lib64:/opt/tk/lib64/plugin/opskernel:/opt/tk/lib64/plugin/nnengine"
    assert_equal "$(jq -r '.devices.env.PYTHONPATH' <<<"$frag")" "/opt/tk/python/site-packages:/opt/tk/opp/built-in/op_impl/ai_core/tbe"
    run jq -r '.devices.readOnly[]' <<<"$frag"
    assert_line "$SBX_ASCEND_INSTALL_INFO"
    spec=$(jq -c --argjson f "$frag" '. + $f' <<<"$(spec_sh 'ls /dev | grep -E "davinci|devmm|hisi"; echo "PATH=$PATH"; echo "OPP=$ASCEND_OPP_PATH"; test -r '"$SBX_ASCEND_INSTALL_INFO"' && echo info')")
    run --separate-stderr sbx-launch - <<<"$spec"
    assert_success
    assert_output "$(printf 'davinci0\ndavinci1\ndavinci_manager\ndevmm_svm\nhisi_hdc\nPATH=/usr/local/bin:/usr/bin:/bin\nOPP=/opt/tk/opp\ninfo')"
    run --separate-stderr sbx-launch --dry-run - <<<"$spec"
    assert_equal "$(jq_out .seccompProfile)" npu
}

@test "no devices: the launch has no davinci bind, no ASCEND_* and no PATH prefix" {
    run --separate-stderr sbx-launch --dry-run - <<<"$(spec_sh true)"
    assert_success
    refute_output --partial davinci
    refute_output --partial ASCEND_
    assert_equal "$(jq_out '.env.PATH, .seccompProfile' | tr '\n' ' ')" "/usr/bin:/bin baseline "
}

@test "a devices member that is not what sbx-npu makes is refused naming the field" {
    bad() { run --separate-stderr sbx-launch --dry-run - <<<"$(spec_sh true "{\"devices\": $1}")"; assert_failure 2; assert_output ""; assert_equal "$(jq -r .message <<<"$stderr")" "$2"; }
    bad "{\"nodes\":[{\"host\":\"$WS\",\"sandbox\":\"/dev/davinci0\"}]}" "devices.nodes[0]: host: must be an absolute path to a character device"
    bad "{\"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/null\"}]}" "devices.nodes[0]: sandbox: must be /dev/<name>, a name bwrap's /dev does not have"
    bad "{\"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/../etc/x\"}]}" "devices.nodes[0]: sandbox: must be /dev/<name>, a name bwrap's /dev does not have"
    bad "{\"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/d0\"}],\"readOnly\":[\"/proc/sys\"]}" "devices.readOnly[0]: overlaps a mount the launch makes itself"
    bad "{\"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/d0\"}],\"env\":{\"LD_PRELOAD\":\"/x.so\"}}" "devices.env.LD_PRELOAD: only ASCEND_*, LD_LIBRARY_PATH, PYTHONPATH and TOOLCHAIN_HOME"
    bad "{\"nodes\":[]}" "devices.nodes[0]: must list 1 to 128 device nodes"
}

@test "sbx-run: chips [4,5] with 5 busy never run and name NPU 5; chips [6,4] run with davinci0 and davinci1" {
    STATE="$WORK/state"
    req() { jq -cn --arg ws "$WS" --arg id "$1" --argjson chips "$2" '{executionId: $id, language: "shell", code: "ls /dev | grep davinci; touch ran", workspace: $ws, devices: {chips: $chips}}'; }
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(req n1 '[4,5]')"
    assert_failure 3
    result=$(jq -c 'select(.event == "finished") | .result' <<<"$output")
    assert_equal "$(jq -r '.exitCode, .failureClass' <<<"$result" | tr '\n' ' ')" "null policy "
    assert_equal "$(jq -r .error <<<"$result")" "Requested NPU cards are not usable on this machine: NPU 5 cannot be opened inside the sandbox: dcmi model initialized failed, because the device is used. ret is -8020"
    [ ! -e "$WS/ran" ]
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(req n2 '[6,4]')"
    assert_success
    result=$(jq -c 'select(.event == "finished") | .result' <<<"$output")
    assert_equal "$(jq -r .stdout <<<"$result")" "$(printf 'davinci0\ndavinci1\ndavinci_manager')"
}

@test "NVIDIA: inventory from the proc tree and nvidia-smi, probe, renumbered fragment in a real sandbox" {
    nvidia_setup
    run --separate-stderr sbx-npu --vendor nvidia list --refresh
    assert_success
    run jq -r '.source, (.devices[] | [.hostIndex, .chipName, .busId, .aiCorePercent, .hbmUsedMB, .powerW, .sandboxUsable] | @tsv)' <<<"$output"
    assert_output $'nvidia-smi\n0\tNVIDIA A100-SXM4-80GB\t0000:07:00.0\t17\t1024\t61.5\ttrue\n3\tNVIDIA H100 80GB HBM3\t0000:8a:00.0\t\t0\t70.12\ttrue'
    FAKE_NVIDIA_SMI_FAIL=1 run --separate-stderr sbx-npu --vendor nvidia list --refresh
    assert_equal "$(jq_out '.error, (.devices | length)' | tr '\n' '|')" "Could not read GPU status: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.|2|"
    run --separate-stderr sbx-npu --vendor nvidia fragment --chips 3
    assert_success
    frag=$output
    assert_equal "$(jq -c '[.devices.nodes[].sandbox]' <<<"$frag")" '["/dev/nvidia0","/dev/nvidiactl","/dev/nvidia-uvm","/dev/nvidia-uvm-tools"]'
    spec=$(jq -c --argjson f "$frag" '. + $f' <<<"$(spec_sh 'ls /dev | grep nvidia')")
    run --separate-stderr sbx-launch - <<<"$spec"
    assert_success
    assert_output "$(printf 'nvidia-uvm\nnvidia-uvm-tools\nnvidia0\nnvidiactl')"
    run --separate-stderr sbx-npu --vendor nvidia probe --chip 1
    assert_failure 3
    assert_equal "$(jq_out .sandboxUnusableReason)" "GPU 1 is no longer present on this machine."
}

@test "as root, sbx-run's helpers (sbx-npu here) never hold CAP_SYS_ADMIN or CAP_DAC_OVERRIDE, though sbx-run keeps sys_admin bounded for sbx-launch" {
    [ "$(id -u)" -eq 0 ] || skip "the bounding set is narrowed as root only"
    # A copy of sbx-run beside a stand-in sbx-npu that records its own
    # bounding set and its parent's (sbx-run's), then fails the fragment.
    mkdir -p "$WORK/bin"
    cp "$SBX_BIN/sbx-run" "$SBX_BIN/sbx-launch" "$WORK/bin/"
    cat > "$WORK/bin/sbx-npu" <<SH
#!/bin/sh
grep ^CapBnd: /proc/\$PPID/status > "$WORK/parent.caps"
grep ^CapBnd: /proc/self/status > "$WORK/helper.caps"
echo "no chips here" >&2
exit 1
SH
    chmod 755 "$WORK/bin/sbx-npu"
    run --separate-stderr "$WORK/bin/sbx-run" --state-dir "$WORK/state" - <<<"$(jq -cn --arg ws "$WS" '{executionId: "caps", language: "shell", code: "true", workspace: $ws, devices: {chips: [4]}}')"
    assert_failure
    bit() { local m; m=$(awk '{print $2}' "$1"); echo $(( (0x$m >> $2) & 1 )); }
    assert_equal "parent sys_admin $(bit "$WORK/parent.caps" 21)" "parent sys_admin 1"
    assert_equal "helper sys_admin $(bit "$WORK/helper.caps" 21)" "helper sys_admin 0"
    assert_equal "helper dac_override $(bit "$WORK/helper.caps" 1)" "helper dac_override 0"
}
