#!/usr/bin/env bash
# The ringdp-train command as a user runs it: tests/cli/train.sh CASE BUILD_DIR
# Each case exits 0 on success, 1 with a message on failure. Every mpirun has a hard timeout so
# a hang fails the test instead of stalling the suite, and no rank may outlive the job.
case_name=$1
build=$(cd "$2" && pwd)
train="$build/apps/train/ringdp-train"
source "$(dirname "$0")/common.sh"
run() { run_app "$train" 60 "$@"; }  # run NP ARGS...
expect_error() {  # expect_error CODE SUBSTRING NP ARGS...
  local code=$1 text=$2
  shift 2
  run "$@"
  [ $rc -eq "$code" ] || fail "ringdp-train ${*:2}: exit $rc, expected $code; output: $out"
  grep -qF -- "$text" <<<"$out" || fail "ringdp-train ${*:2}: no '$text' in: $out"
  [ $seconds -le 15 ] || fail "ringdp-train ${*:2}: took $seconds s to fail"
  echo "ok: ringdp-train ${*:2} -> exit $rc, '$text' (${seconds}s)"
}

case "$case_name" in
  ucx)
    grep -q "RINGDP_HAVE_UCX 1" "$build/config.h" || { echo "SKIPPED: built without UCX (libucx-dev; meson option ucx)"; exit 77; }
    # --backend ucx (issue #51 item 6): the same job with every message over UCX ends with the
    # parameters of the job over MPI, bit for bit (the same algorithms, the same order of
    # additions); RINGDP_DEBUG=INFO says what carried it; CUDA tensors are refused by name.
    RINGDP_SHM_MAX_BYTES=0 run 3 --epochs 3 --momentum 0.9 --export "$work/mpi.json"
    [ $rc -eq 0 ] || fail "over MPI: exit $rc: $out"
    RINGDP_SHM_MAX_BYTES=0 RINGDP_DEBUG=INFO run 3 --epochs 3 --momentum 0.9 --backend ucx --export "$work/ucx.json"
    [ $rc -eq 0 ] || fail "over UCX: exit $rc: $out"
    grep -qF "ringdp: 3 ranks on 1 host; bootstrap mpi, host tensors' messages over ucx" <<<"$out" ||
      fail "RINGDP_DEBUG=INFO does not say UCX carried the job: $out"
    cmp -s "$work/mpi.json" "$work/ucx.json" || fail "the parameters over UCX differ from those over MPI"
    expect_error 1 "--backend ucx carries host tensors; use --device cpu" 2 --epochs 1 --backend ucx --device cuda
    echo "ok: --backend ucx trains to the parameters over MPI, bit for bit"
    ;;
  default)
    run 4
    [ $rc -eq 0 ] || fail "default run exited $rc: $out"
    [ "$(grep -c '^epoch [0-9]*/10  loss ' <<<"$out")" -eq 10 ] || fail "expected 10 epoch lines: $out"
    [ "$(tail -n 1 <<<"$out")" = "Finished training" ] || fail "last line is not 'Finished training': $out"
    first=$(grep '^epoch 1/' <<<"$out" | awk '{print $4}')
    last=$(grep '^epoch 10/' <<<"$out" | awk '{print $4}')
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss did not fall: $first -> $last"
    echo "ok: 4 ranks, 10 epochs, loss $first -> $last, Finished training"
    ;;
  help)
    out=$("$train" --help) || fail "--help exited non-zero"
    for flag in --model --hidden --samples --batch-size --epochs --lr --momentum --data --device --backend --algo \
                --bucket-mb --checkpoint --resume --init --export --timeout --no-overlap --explain --uneven \
                --find-unused-parameters --comm-hook; do
      grep -qF -- "$flag" <<<"$out" || fail "--help does not list $flag"
    done
    grep -qF -- "--resume [always|auto|never]" <<<"$out" && grep -qF -- "--resume auto: continue when it exists" <<<"$out" ||
      fail "--help does not explain --resume's modes: $out"
    echo "ok: --help lists every flag and --resume's modes"
    ;;
  errors)
    expect_error 2 "--bogus" 2 --bogus
    expect_error 2 "--lr: '-0.5' must be positive" 2 --lr -0.5
    expect_error 2 "--epochs: '0' must be positive" 2 --epochs 0
    expect_error 2 "--model: mlpx not in" 2 --model mlpx
    # Values that used to wrap, overflow or pass as "not negative" (#33): refused at the command line.
    expect_error 2 "--lr: 'nan' is not a finite number" 2 --lr nan
    expect_error 2 "--momentum: 'nan' is not a finite number" 2 --momentum nan
    expect_error 2 "--bucket-mb: 'nan' is not a finite number" 2 --bucket-mb nan
    expect_error 2 "--epochs: '99999999999999999999' is not a whole number" 2 --epochs 99999999999999999999
    expect_error 2 "--seed: '-1' is not a non-negative integer" 2 --seed -1
    for t in inf nan 0.0001 1e10; do
      expect_error 2 "--timeout: '$t' is not a number of seconds from 0.001 to 100000000" 2 --timeout "$t"
    done
    # A deadline of now + timeout overflowed the clock: the job ended at its first collective.
    RINGDP_TIMEOUT=9999999999 expect_error 1 "RINGDP_TIMEOUT='9999999999': expected a number of seconds from 1 to 100000000" 2
    RINGDP_TIMEOUT= expect_error 1 "RINGDP_TIMEOUT is set but empty" 2
    expect_error 1 "cannot open data file '$work/missing.csv': No such file or directory" 2 --data "$work/missing.csv"
    # Issue #48 item 10: messages that misled. 1e300 is inf in float32 ("diverged... lower --lr"
    # before); a folder as an output failed only at the write; /dev/zero under a memory limit was a
    # bare std::bad_alloc; powersgd's rank limit was not said.
    echo '{"weight": {"shape": [1, 10], "data": [1e300,0,0,0,0,0,0,0,0,0]}, "bias": {"shape": [1], "data": [0]}}' >"$work/huge.json"
    expect_error 1 "entry 'weight': data[0] is 1e+300, beyond float32's range" 2 --init "$work/huge.json"
    expect_error 2 "--export: '$work': it is a folder; name a file in it" 2 --export "$work"
    expect_error 2 "--comm-hook: 'powersgd:99999' is not a comm hook: expected none, fp16, bf16, powersgd:RANK or powersgd:RANK:START (RANK from 1 to 1024" 2 --comm-hook powersgd:99999
    (ulimit -v 1000000 && expect_error 1 "cannot read data file '/dev/zero': out of memory after" 1 --data /dev/zero)
    # A joined rank shadows the default all-reduce only, not a hook's collectives.
    expect_error 1 "--comm-hook fp16 does not work with --uneven join" 2 --comm-hook fp16 --uneven join
    # A missing output folder is found before training, not when the file is written after it.
    expect_error 2 "--export: '$work/no/out.json': the folder '$work/no' does not exist" 2 --epochs 1 --export "$work/no/out.json"
    expect_error 2 "--checkpoint: '$work/no/ck.bin': the folder '$work/no' does not exist" 2 --epochs 1 --checkpoint "$work/no/ck.bin"
    RINGDP_TIMELINE="$work/no/tl" expect_error 1 "RINGDP_TIMELINE '$work/no/tl': the folder '$work/no' does not exist" 2 --epochs 1
    ! grep -q '^epoch' <<<"$out" || fail "RINGDP_TIMELINE into a missing folder: trained first: $out"
    # A learning rate that blows the parameters up stops the run at that epoch, on every rank.
    expect_error 1 "training diverged in epoch" 3 --lr 1000
    grep -q "loss -\?nan\|loss inf" <<<"$out" && fail "a diverged run went on printing non-finite losses: $out"
    printf 'a,b,y\n1,2,3\n4,x,6\n' >"$work/bad.csv"
    expect_error 1 "line 3: column 2 ('x') is not a number" 2 --data "$work/bad.csv"
    printf '1,2,3\n4,5\n' >"$work/ragged.csv"
    expect_error 1 "line 2: 2 columns, expected 3" 2 --data "$work/ragged.csv"
    expect_error 1 "data file '$work' is a directory; --data expects a CSV file" 2 --data "$work"
    printf '1,2,3\n4,nan,6\n' >"$work/nan.csv"
    expect_error 1 "is not a finite number" 2 --data "$work/nan.csv"
    printf '1,2,3\n4,5,6\n' >"$work/two.csv"
    echo '{"weight": {"shape": [1, 10], "data": [0,0,0,0,0,0,0,0,0,0]}, "bias": {"shape": [1], "data": [0]}}' >"$work/init10.json"
    expect_error 1 "'weight' has shape [1, 10] in the state dict but [1, 2] in the model" 2 --data "$work/two.csv" --init "$work/init10.json"
    # A fractional extent was truncated and loaded (#33): refused, as is a repeated key.
    echo '{"weight": {"shape": [1.5, 10], "data": [0,0,0,0,0,0,0,0,0,0]}, "bias": {"shape": [1], "data": [0]}}' >"$work/frac.json"
    expect_error 1 "entry 'weight': shape [1.5,10] is not a list of whole numbers" 2 --init "$work/frac.json"
    if [ ! -e /dev/nvidia0 ]; then
      expect_error 1 "--device cuda:" 2 --device cuda
    fi
    if grep -q "define RINGDP_HAVE_NCCL 1" "$build/config.h"; then
      expect_error 1 "--backend nccl needs CUDA tensors" 2 --backend nccl --device cpu
    else  # a build without NCCL (the MPICH pass) refuses the backend itself
      expect_error 1 "backend nccl: ringdp was built without NCCL" 2 --backend nccl --device cpu
    fi
    ;;
  paths)
    # #48: an output that is an input or the other output, however spelled (./, .., an input read
    # through a link to it, a file not made yet), is refused before any work, and the file is left
    # as it was; an empty path is named, not taken as "no file".
    printf '1,2,3\n4,5,6\n' >"$work/d.csv"
    cp "$work/d.csv" "$work/d.before"
    ln -s d.csv "$work/link.csv"
    expect_error 2 "--checkpoint '$work/./d.csv' is the same file as --data '$work/d.csv': it would be overwritten by this run's output" \
      2 --data "$work/d.csv" --checkpoint "$work/./d.csv"
    expect_error 2 "--export '$work/d.csv' is the same file as --data '$work/link.csv'" 2 --data "$work/link.csv" --export "$work/d.csv"
    mkdir "$work/sub"
    expect_error 2 "--checkpoint '$work/ck.bin' is the same file as --export '$work/sub/../ck.bin': it would be overwritten by this run's other output" \
      2 --epochs 1 --checkpoint "$work/ck.bin" --export "$work/sub/../ck.bin"
    cmp -s "$work/d.csv" "$work/d.before" || fail "a refused run changed the data file"
    [ ! -e "$work/ck.bin" ] || fail "a refused run wrote its checkpoint"
    expect_error 2 "--data: an empty path; name a file (leave --data out to train on synthetic data)" 2 --data ""
    expect_error 2 "--init: an empty path; name a file" 2 --init ""
    expect_error 2 "--checkpoint: an empty path; name a file" 2 --checkpoint ""
    expect_error 2 "--export: an empty path; name a file" 2 --export ""
    # A checkpoint and an export that are symbolic links are written through, the links kept, and
    # a 0600 file stays 0600 (before: ck.bin became a plain 0644 file, real/ck.bin stayed old).
    mkdir "$work/real"
    ln -s real/ck.bin "$work/ck.bin"
    ln -s real/out.json "$work/out.json"
    run 1 --epochs 2 --checkpoint "$work/ck.bin" --export "$work/out.json"
    [ $rc -eq 0 ] || fail "a run writing through links failed: $out"
    chmod 600 "$work/real/ck.bin" "$work/real/out.json"
    run 1 --epochs 3 --checkpoint "$work/ck.bin" --resume auto --export "$work/out.json"
    [ $rc -eq 0 ] && grep -q '^epoch 3/3' <<<"$out" || fail "resume through a link: $out"
    [ -L "$work/ck.bin" ] && [ -L "$work/out.json" ] || fail "an output link was replaced by a plain file"
    [ "$(stat -c %a "$work/real/ck.bin") $(stat -c %a "$work/real/out.json")" = "600 600" ] ||
      fail "modes not kept: $(stat -c '%n %a' "$work"/real/*)"
    echo "ok: outputs that are links are written through, the links and the files' modes kept"
    ;;
  checkpoint)
    run 2 --epochs 10 --momentum 0.9 --export "$work/straight.json"
    [ $rc -eq 0 ] || fail "uninterrupted run failed: $out"
    # A save killed midway leaves ck.bin.tmp.PID (up to 33 MB): the next save removes those of
    # processes that are gone, never a live writer's ($$, this shell).
    sleep 0 &
    dead=$!
    wait $dead
    printf 'partial' >"$work/ck.bin.tmp.$dead"
    printf 'partial' >"$work/ck.bin.tmp.$$"
    run 2 --epochs 5 --momentum 0.9 --checkpoint "$work/ck.bin"
    [ $rc -eq 0 ] || fail "first half failed: $out"
    [ ! -e "$work/ck.bin.tmp.$dead" ] || fail "the temporary of process $dead, which is gone, was left"
    [ -e "$work/ck.bin.tmp.$$" ] || fail "the temporary of process $$, which is alive, was removed"
    rm "$work/ck.bin.tmp.$$"
    echo "ok: a save removes the orphaned ck.bin.tmp.$dead and keeps a live writer's"
    run 2 --epochs 10 --momentum 0.9 --checkpoint "$work/ck.bin" --resume --export "$work/resumed.json"
    [ $rc -eq 0 ] || fail "resumed run failed: $out"
    grep -q '^epoch 6/10' <<<"$out" || fail "resume did not start at epoch 6: $out"
    grep -q '^epoch 5/10' <<<"$out" && fail "resume repeated epoch 5: $out"
    cmp -s "$work/straight.json" "$work/resumed.json" || fail "resumed parameters differ from the uninterrupted run"
    echo "ok: resume from epoch 5 ends bit-identical to an uninterrupted 10-epoch run"
    cp "$work/ck.bin" "$work/truncated.bin"
    truncate -s 40 "$work/truncated.bin"
    expect_error 1 "checksum mismatch" 2 --checkpoint "$work/truncated.bin" --resume
    cp "$work/ck.bin" "$work/flipped.bin"
    printf '\x55' | dd of="$work/flipped.bin" bs=1 seek=60 conv=notrunc status=none
    expect_error 1 "corrupt" 2 --checkpoint "$work/flipped.bin" --resume
    expect_error 1 "does not fit this model" 2 --checkpoint "$work/ck.bin" --resume --model mlp
    # A valid checksum over nonsense: a crafted epoch of -2 trained "epoch -2/2" (#33).
    python3 - "$work/ck.bin" "$work/negative.bin" <<'PY'
import struct, sys, zlib
data = bytearray(open(sys.argv[1], "rb").read())
data[12:20] = struct.pack("<q", -2)  # after the magic and the version
data[-4:] = struct.pack("<I", zlib.crc32(bytes(data[:-4])))
open(sys.argv[2], "wb").write(data)
PY
    expect_error 1 "has epoch -2 (expected 0 or more)" 2 --epochs 2 --momentum 0.9 --checkpoint "$work/negative.bin" --resume
    grep -q '^epoch' <<<"$out" && fail "a checkpoint at epoch -2 trained: $out"
    expect_error 1 "cannot open checkpoint" 2 --checkpoint "$work/none.bin" --resume
    # The shards depend on the world size: a 2-rank checkpoint resumed on 3 ranks is refused.
    expect_error 1 "was written by a run of 2 ranks with shuffle on; this run has 3 ranks" 3 \
      --epochs 10 --momentum 0.9 --checkpoint "$work/ck.bin" --resume
    ;;
  resume-auto)
    # #36: a job killed in the middle of an epoch and started again with the same command line
    # (what a requeued Slurm job does) continues from its last checkpoint on its own, and ends with
    # the parameters of a run that was never interrupted, momentum buffers included.
    common=(--model mlp --hidden 16,16 --batch-size 25 --momentum 0.9 --bucket-mb 0.001 --first-bucket-mb 0.001)
    run 3 "${common[@]}" --epochs 6 --checkpoint "$work/straight.bin" --export "$work/straight.json"
    [ $rc -eq 0 ] || fail "uninterrupted run failed: $out"
    job=("${common[@]}" --epochs 6 --checkpoint "$work/ck.bin" --resume auto --export "$work/resumed.json")
    # Collectives of this job, counting from 0: 2 broadcasts of --resume auto (the epoch, the length
    # of the optimizer state: none on a fresh start), DDP's all_gather and 6 parameter broadcasts (0-8),
    # then per epoch 4 steps of 2 bucket all-reduces (caps of 262 floats: the last two layers,
    # 289 floats, then the first, 176) and the loss's reduce (9). Epoch 4 runs collectives 36-44;
    # 41 is the second bucket of its third step.
    kill_op=41
    RINGDP_FAULT=kill:rank=1:op=$kill_op run 3 "${job[@]}"
    [ $rc -ne 0 ] || fail "the job whose rank 1 was killed ended with exit 0: $out"
    grep -qF "no checkpoint '$work/ck.bin' yet: starting at epoch 1 (--resume auto)" <<<"$out" ||
      fail "--resume auto without a checkpoint does not say it starts fresh: $out"
    grep -qF "rank 1: RINGDP_FAULT kill at all_reduce #$kill_op" <<<"$out" ||
      fail "the kill did not land on gradient all-reduce #$kill_op: $out"
    grep -q '^epoch 3/6' <<<"$out" && ! grep -q '^epoch 4/6' <<<"$out" ||
      fail "the kill did not land in epoch 4 (after epoch 3 was reported, before epoch 4 was): $out"
    [ ! -e "$work/resumed.json" ] || fail "the killed job exported parameters"
    saved_epoch=$(python3 -c 'import struct, sys; print(struct.unpack_from("<q", open(sys.argv[1], "rb").read(), 12)[0])' "$work/ck.bin")
    [ "$saved_epoch" = 3 ] || fail "the killed job's checkpoint holds epoch $saved_epoch, expected 3"
    echo "ok: a job killed at all-reduce #$kill_op, in the middle of epoch 4, exits $rc and leaves its epoch-3 checkpoint"
    run 3 "${job[@]}"
    [ $rc -eq 0 ] || fail "the rerun with --resume auto failed: $out"
    grep -qF "resuming from checkpoint '$work/ck.bin': 3 of 6 epochs done" <<<"$out" || fail "the rerun did not resume: $out"
    grep -q '^epoch 4/6' <<<"$out" && ! grep -q '^epoch 3/6' <<<"$out" || fail "the rerun did not start at epoch 4: $out"
    cmp -s "$work/straight.json" "$work/resumed.json" ||
      fail "the resumed job's parameters differ from the uninterrupted run's: $(diff "$work/straight.json" "$work/resumed.json" | head -n 4)"
    # Both final checkpoints hold the parameters and the momentum buffers as raw bytes.
    cmp -s "$work/straight.bin" "$work/ck.bin" || fail "the final checkpoints differ (parameters or momentum)"
    echo "ok: the rerun resumes at epoch 4 and ends bit-identical to the uninterrupted run (--export and the checkpoint's bytes)"
    # A job requeued after it finished trains nothing more and exports the same parameters.
    rm "$work/resumed.json"
    run 3 "${job[@]}"
    [ $rc -eq 0 ] || fail "a rerun of the finished job failed: $out"
    grep -qF "resuming from checkpoint '$work/ck.bin': 6 of 6 epochs done" <<<"$out" && ! grep -q '^epoch' <<<"$out" ||
      fail "a rerun of the finished job trained again: $out"
    cmp -s "$work/straight.json" "$work/resumed.json" || fail "a rerun of the finished job exported other parameters"
    echo "ok: a rerun of the finished job trains nothing and exports the same parameters"
    # The shards follow from the world size: a checkpoint of 3 ranks is refused on 2, as with --resume.
    expect_error 1 "was written by a run of 3 ranks with shuffle on; this run has 2 ranks" 2 "${job[@]}"
    ! grep -q '^epoch' <<<"$out" || fail "--resume auto on another world size trained: $out"
    # --resume never starts at epoch 1 whatever is there; bare --resume still needs the file.
    cp "$work/ck.bin" "$work/again.bin"
    run 3 "${common[@]}" --epochs 1 --checkpoint "$work/again.bin" --resume never
    [ $rc -eq 0 ] && grep -q '^epoch 1/1' <<<"$out" || fail "--resume never did not start fresh: $out"
    expect_error 1 "cannot open checkpoint '$work/none.bin'" 2 --checkpoint "$work/none.bin" --resume
    expect_error 1 "--resume needs --checkpoint PATH" 2 --resume auto
    # A checkpoint that cannot be looked at is not taken for a missing one, which would start the
    # job over and overwrite it at the first save.
    ln -s "$work/loop.bin" "$work/loop.bin"
    expect_error 1 "--resume auto: cannot tell whether checkpoint '$work/loop.bin' exists: Too many levels of symbolic links" 2 \
      --checkpoint "$work/loop.bin" --resume auto
    ! grep -q '^epoch' <<<"$out" || fail "--resume auto trained past a checkpoint it could not look at: $out"
    expect_error 2 "--resume: 'sometimes' is not a resume mode: expected always (the checkpoint must exist), auto" 2 --resume sometimes
    expect_error 2 "--resume: '' is not a resume mode" 2 --resume ''
    ;;
  resume-torn-save)
    # A rank killed while it writes the checkpoint (SIGXFSZ at a file-size limit, the default
    # action of which ends the process mid-write) leaves the previous checkpoint whole: --resume
    # auto continues from it and ends as an uninterrupted run does.
    common=(--model mlp --hidden 64,64 --momentum 0.9 --bucket-mb 0.01)
    run 2 "${common[@]}" --epochs 4 --export "$work/straight.json"
    [ $rc -eq 0 ] || fail "uninterrupted run failed: $out"
    job=("${common[@]}" --epochs 4 --checkpoint "$work/ck.bin" --resume auto --export "$work/resumed.json")
    run 2 "${common[@]}" --epochs 2 --checkpoint "$work/ck.bin" --resume auto
    [ $rc -eq 0 ] || fail "the first two epochs failed: $out"
    cp "$work/ck.bin" "$work/ck.before"
    # The checkpoint is some 60 KB: writes past 8 KiB end the rank at its next save.
    rank_prefix=(bash -c "ulimit -f 8; exec \"\$@\"" limited)
    OMPI_MCA_btl=self,tcp UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1 RINGDP_SHM_MAX_BYTES=0 run 2 "${job[@]}"
    rank_prefix=()
    [ $rc -ne 0 ] || fail "the job killed during its save ended with exit 0: $out"
    grep -q '^epoch 3/4' <<<"$out" || fail "the job did not reach its save after epoch 3: $out"
    cmp -s "$work/ck.bin" "$work/ck.before" || fail "a save killed midway changed the previous checkpoint"
    ls "$work"/ck.bin.tmp.* >/dev/null 2>&1 || fail "no partial ck.bin.tmp.PID: the save was not interrupted: $out"
    echo "ok: a rank killed in the middle of writing its checkpoint (exit $rc) leaves the previous one unchanged"
    run 2 "${job[@]}"
    [ $rc -eq 0 ] || fail "the rerun with --resume auto failed: $out"
    grep -qF "resuming from checkpoint '$work/ck.bin': 2 of 4 epochs done" <<<"$out" || fail "the rerun did not resume at epoch 3: $out"
    ! ls "$work"/ck.bin.tmp.* >/dev/null 2>&1 || fail "the rerun's save left the dead writer's temporary file"
    cmp -s "$work/straight.json" "$work/resumed.json" || fail "the resumed parameters differ from the uninterrupted run's"
    echo "ok: --resume auto continues from it, removes the torn temporary and ends bit-identical to an uninterrupted run"
    ;;
  full-disk)
    # Every file ringdp-train writes, written past a file-size limit (EFBIG, as a full disk gives
    # ENOSPC): an error with the reason, a non-zero exit, the previous file kept whole (#33:
    # --export destroyed it and gave no reason; RINGDP_TIMELINE exited 0 with truncated JSON).
    mlp=(--model mlp --hidden 64,64 --epochs 2 --bucket-mb 0.01)
    printf '{"previous": 1}\n' >"$work/export.json"
    run_app_limited 8 "$train" 60 2 "${mlp[@]}" --export "$work/export.json"
    [ $rc -eq 1 ] || fail "--export past the limit: exit $rc, expected 1: $out"
    grep -qF "cannot write --export '$work/export.json': File too large" <<<"$out" || fail "--export: no reason given: $out"
    [ "$(cat "$work/export.json")" = '{"previous": 1}' ] || fail "--export destroyed the previous file"
    RINGDP_TIMELINE="$work/tl" run_app_limited 8 "$train" 60 2 "${mlp[@]}"
    [ $rc -ne 0 ] || fail "RINGDP_TIMELINE past the limit: exit 0: $out"
    grep -qF "cannot write RINGDP_TIMELINE's trace '$work/tl.rank0.json': File too large" <<<"$out" ||
      fail "RINGDP_TIMELINE: no reason given: $out"
    for f in "$work"/tl.rank*.json; do
      [ -e "$f" ] || continue
      python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" || fail "RINGDP_TIMELINE left invalid JSON in $f"
    done
    run 2 "${mlp[@]}" --checkpoint "$work/ck.bin"
    [ $rc -eq 0 ] || fail "a checkpointed run failed: $out"
    cp "$work/ck.bin" "$work/ck.before"
    run_app_limited 8 "$train" 60 2 "${mlp[@]}" --checkpoint "$work/ck.bin"
    [ $rc -eq 1 ] || fail "--checkpoint past the limit: exit $rc, expected 1: $out"
    grep -qF "cannot write checkpoint '$work/ck.bin': File too large" <<<"$out" || fail "--checkpoint: no reason given: $out"
    cmp -s "$work/ck.bin" "$work/ck.before" || fail "a failed save changed the previous checkpoint"
    ! ls "$work" | grep -q '\.tmp\.' || fail "temporary files were left: $(ls "$work")"
    echo "ok: --export, RINGDP_TIMELINE and --checkpoint past a file-size limit exit non-zero with the reason, keeping the previous files"
    ;;
  rank-failure)
    # Rank 1 dies (SIGKILL) in the middle of training: the job must end, non-zero, promptly.
    RINGDP_FAULT=kill:rank=1:op=12 run 4 --epochs 10
    [ $rc -ne 0 ] || fail "training with a killed rank ended with exit 0"
    [ $seconds -le 20 ] || fail "took $seconds s to end after a rank died"
    echo "ok: a rank killed during training ends the 4-rank job with exit $rc in ${seconds}s"
    RINGDP_TIMEOUT=2 RINGDP_FAULT=delay:rank=2:op=12:ms=6000 run 4 --epochs 10
    [ $rc -ne 0 ] || fail "a rank stalled past the timeout did not end the job"
    grep -q "exceeded 2 s" <<<"$out" || fail "no timeout report: $out"
    echo "ok: a rank stalled 6 s with a 2 s timeout ends the job with a report in ${seconds}s"
    ;;
  mixed-launcher)
    # Built against one MPI, launched by the other's launcher: each process would initialise as a
    # job of one and train alone, exiting 0. It must fail at init, naming both and the fix.
    # The other MPI's launcher is looked for now, not when meson configured: scripts/test installs
    # MPICH after scripts/demo has configured build/ (issue #48 item 11: skipped in a fresh clone).
    case "${RINGDP_MPI_IMPL:-}" in
      openmpi) other_impl=mpich candidates=(mpiexec.mpich) ;;
      mpich) other_impl=openmpi candidates=(mpirun.openmpi mpiexec.openmpi) ;;
      *) echo "SKIPPED: this build's MPI is '${RINGDP_MPI_IMPL:-}', neither openmpi nor mpich"; exit 77 ;;
    esac
    other=
    for candidate in "${candidates[@]}"; do
      other=$(command -v "$candidate") && break
    done
    if [ -z "$other" ]; then
      echo "SKIPPED: no ${candidates[*]} on PATH (scripts/test installs $other_impl beside this build's MPI)"
      exit 77
    fi
    other_args=()
    [ "$other_impl" = openmpi ] && other_args=(--oversubscribe)
    start=$SECONDS
    out=$(timeout 60 "$other" -n 2 "${other_args[@]}" "$train" --epochs 1 2>&1)
    rc=$? seconds=$((SECONDS - start))
    [ $rc -ne 124 ] || fail "launched by $other: hung"
    [ $rc -ne 0 ] || fail "launched by $other: exit 0 (independent one-rank trainings): $out"
    grep -q "rank 1: error: this process was started as rank 1 of 2 by .*sees a job of 1 rank" <<<"$out" ||
      fail "launched by $other: no error naming the mismatch: $out"
    grep -qF "Launch with this build's launcher, $RINGDP_MPIEXEC -n 2" <<<"$out" ||
      fail "launched by $other: the error does not name this build's launcher ($RINGDP_MPIEXEC): $out"
    ! grep -q "^epoch" <<<"$out" || fail "launched by $other: trained anyway: $out"
    echo "ok: built for $RINGDP_MPI_IMPL, launched by $other -> exit $rc in ${seconds}s, naming $RINGDP_MPIEXEC"
    ;;
  waiting-cpu)
    # A rank that waits long for a late peer gives the core away (issue #47 item 6: it polled a
    # whole core for 3 s). Rank 1 arrives 3 s late at collective 6; rank 0's CPU time for the
    # whole job must stay far below the wait (about 0.1 s now, 3 s before). Not a speed test: a
    # loaded machine lengthens a poll, not the CPU a sleeping rank uses.
    # On shared memory, over MPI, and over UCX (its waits poll the worker with the same back-off).
    ways=("shared memory" "MPI")
    grep -q "RINGDP_HAVE_UCX 1" "$build/config.h" && ways+=(UCX)
    for way in "${ways[@]}"; do
      case $way in
        MPI) settings=(RINGDP_SHM_MAX_BYTES=0) backend=mpi ;;
        UCX) settings=(RINGDP_SHM_MAX_BYTES=0) backend=ucx ;;
        *) settings=() backend=mpi ;;
      esac
      # Each rank's report goes to a file of its own: MPICH's launcher may lose a rank's last
      # lines of output at exit (1 run in 2 here).
      rm -f "$work"/cpu.*
      out=$(timeout 60 "$mpiexec" -n 2 "${launch_args[@]}" env "${settings[@]}" \
        RINGDP_FAULT=delay:rank=1:op=6:ms=3000 sh -c \
        '/usr/bin/time -o "$1/cpu.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" -f "%U %S" "$0" --epochs 2 --backend "$2"' \
        "$train" "$work" "$backend" 2>&1)
      rc=$?
      [ $rc -eq 0 ] || fail "a job with a 3 s late rank exited $rc ($way): $out"
      cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$work/cpu.0" 2>/dev/null)
      [ -n "$cpu" ] || fail "no CPU time for rank 0 ($way): $out"
      awk -v c="$cpu" 'BEGIN { exit !(c < 1.0) }' || fail "rank 0 used $cpu s of CPU while it waited 3 s for rank 1 ($way)"
      echo "ok: rank 0 used $cpu s of CPU in a job where it waited 3 s for rank 1, $way"
    done
    ;;
  disagree)
    # Ranks started with different flags or data (an MPMD launch line: `:` between parts) must
    # be stopped before training, naming the difference (issue #48 item 8: they trained, exit 0).
    mpmd() {  # mpmd ARGS_OF_RANK_0 -- ARGS_OF_RANKS_1_AND_2: sets $out and $rc
      local first=() rest=()
      while [ "$1" != -- ]; do first+=("$1"); shift; done
      shift
      rest=("$@")
      out=$(timeout 60 "$mpiexec" "${launch_args[@]}" -n 1 "$train" "${first[@]}" : -n 2 "$train" "${rest[@]}" 2>&1)
      rc=$?
      [ $rc -ne 124 ] || fail "an MPMD launch hung: ${first[*]} -- ${rest[*]}"
    }
    refused() {  # refused WHAT: the job failed naming WHAT on every rank, before any epoch
      [ $rc -ne 0 ] || fail "ranks that disagree trained, exit 0: $out"
      [ "$(grep -o "error: the ranks were given different $1" <<<"$out" | wc -l)" -eq 3 ] ||
        fail "not every rank named the difference ('$1'): $out"
      ! grep -q "^epoch" <<<"$out" || fail "trained before the difference was found: $out"
    }
    mpmd --epochs 2 --lr 0.01 -- --epochs 2 --lr 0.1
    refused "settings: --lr is 0.01 on rank 0 but 0.1 on rank 1 (and differs on 1 more rank(s))"
    echo "ok: --lr 0.01 on rank 0, 0.1 on ranks 1-2: exit $rc, named on every rank"
    for i in $(seq 40); do printf '%d,%d,%d\n' "$i" "$((i % 7))" "$((2 * i))"; done >"$work/forty.csv"
    head -n 30 "$work/forty.csv" >"$work/thirty.csv"
    mpmd --epochs 1 --data "$work/forty.csv" -- --epochs 1 --data "$work/thirty.csv"
    refused "data: the data's size is 40 rows of 3 columns ('$work/forty.csv') on rank 0 but 30 rows of 3 columns ('$work/thirty.csv') on rank 1"
    echo "ok: --data files of 40 and 30 rows: named on every rank"
    sed 's/^7,0,14$/7,0,15/' "$work/forty.csv" >"$work/forty-changed.csv"
    mpmd --epochs 1 --data "$work/forty.csv" -- --epochs 1 --data "$work/forty-changed.csv"
    refused "data: the data's checksum is "
    grep -qF "('$work/forty-changed.csv') on rank 1" <<<"$out" || fail "the changed file is not named: $out"
    echo "ok: one value changed in 40 rows: named by checksum and file"
    cp "$work/forty.csv" "$work/forty-copy.csv"
    mpmd --epochs 1 --data "$work/forty.csv" -- --epochs 1 --data "$work/forty-copy.csv" --verbose
    [ $rc -eq 0 ] || fail "the same data under another name was refused, exit $rc: $out"
    echo "ok: the same data under another file name, and --verbose on some ranks, train"
    ;;
  explain)
    # The values docs/walkthrough.md quotes: 10^rank in, partial sums step by step, 1111 / 4 out.
    expect_row() {  # expect_row LABEL VALUES...: the row of the --explain table that starts with LABEL
      local label=$1
      shift
      local line
      line=$(grep -F -- "   $label" <<<"$out" | head -n 1)
      [ -n "$line" ] || fail "--explain ${args[*]}: no row '$label' in: $out"
      local values=${line#*"$label"}
      values=$(tr -s ' ' <<<"${values# }" | sed 's/^ //')
      [ "$values" = "$*" ] || fail "--explain ${args[*]}: row '$label' is '$values', expected '$*'"
    }
    args=(--explain)
    run 4 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain exited $rc: $out"
    # One host: auto reads the 44-byte bucket out of shared memory, in one step.
    grep -qF "44 B with every rank on one host (RINGDP_SHM_MAX_BYTES; each rank reads the others' parts from shared memory): shared_memory" <<<"$out" ||
      fail "--explain does not say why shared memory: $out"
    grep -qF "hook bias       -> bucket 0 at offset 0 (1 element)" <<<"$out" || fail "no hook line for bias: $out"
    # Whatever the algorithm: 10^rank in, their sum / 4 out, and the same parameters everywhere.
    expect_four_ranks_in_and_out() {
      expect_row "before the all-reduce" 1 10 100 1000
      expect_row "averaged (sum / 4)" 277.75 277.75 277.75 277.75
      grep -q "after the step, bias\[0\] on every rank: .*(identical)" <<<"$out" ||
        fail "--explain ${args[*]}: no identical verdict: $out"
    }
    expect_four_ranks_in_and_out
    expect_row "after step 1/1 shared memory" 1111 1111 1111 1111
    echo "ok: --explain on 4 ranks: 1 10 100 1000 -> 1111 -> 277.75 in one shared-memory step, and why"
    # One rank: nothing to exchange, said so (it crashed: the step table assumed a step).
    args=(--explain)
    run 1 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain on 1 rank exited $rc: $out"
    grep -qF "one rank, so the all-reduce has nothing to exchange" <<<"$out" || fail "--explain on 1 rank: $out"
    echo "ok: --explain on 1 rank says there is nothing to exchange"
    args=(--explain --algo recursive_doubling)
    run 4 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain --algo recursive_doubling exited $rc: $out"
    expect_four_ranks_in_and_out
    expect_row "after step 1/2 exchange" 11 11 1100 1100
    expect_row "after step 2/2 exchange" 1111 1111 1111 1111
    echo "ok: --explain --algo recursive_doubling on 4 ranks: 1 10 100 1000 -> 11 11 1100 1100 -> 1111 -> 277.75"
    args=(--explain --algo ring)
    run 4 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain --algo ring exited $rc: $out"
    expect_row "after step 1/6 reduce-scatter" 1 11 100 1000
    expect_row "after step 2/6 reduce-scatter" 1 11 111 1000
    # Rank 3 completes chunk 0's sum at step 3 and divides it there (avg folded into the ring).
    expect_row "after step 3/6 reduce-scatter" 1 11 111 277.75
    expect_row "after step 4/6 all-gather" 277.75 11 111 277.75
    expect_row "after step 6/6 all-gather" 277.75 277.75 277.75 277.75
    expect_row "averaged (sum / 4)" 277.75 277.75 277.75 277.75
    grep -q "ring divides by 4 where a sum completes" <<<"$out" || fail "--explain --algo ring: no word on the division: $out"
    echo "ok: --explain --algo ring: element 0 travels the ring, reduced by ranks 1, 2, 3, divided by rank 3, then gathered"
    args=(--explain --algo recursive_doubling)
    run 3 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain --algo recursive_doubling on 3 ranks exited $rc: $out"
    expect_row "after step 1/3 fold-in" "1 11 100*"
    expect_row "after step 2/3" "1* 111 111"
    expect_row "after step 3/3 unfold" "111 111 111*"
    expect_row "averaged (sum / 3)" 37 37 37
    echo "ok: --explain on 3 ranks: rank 0 folds into rank 1, sits out, gets the result back"
    # A 20 KB bucket: shared memory with its round scattered. Element 0 is in rank 0's chunk: rank 0
    # sums it, then the others copy the sum.
    args=(--explain --features 5000)
    run 3 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain --features 5000 on 3 ranks exited $rc: $out"
    grep -qF "20004 B with every rank on one host (RINGDP_SHM_MAX_BYTES; each rank reduces 1/N of every round" <<<"$out" ||
      fail "--explain --features 5000: does not say why scattered shared memory: $out"
    expect_row "after step 1/2 reduce-scatter" 111 10 100
    expect_row "after step 2/2 all-gather" 111 111 111
    expect_row "averaged (sum / 3)" 37 37 37
    echo "ok: --explain, 20 KB bucket on 3 ranks: rank 0 sums element 0 in shared memory, the others copy it"
    # The same bucket in 16 KiB slots: a scattered round, then a 3620-byte one read whole. The
    # narration must say so (it once judged the whole bucket by its total size).
    RINGDP_SHM_SLOT_BYTES=16384 run 3 "${args[@]}"
    [ $rc -eq 0 ] || fail "--explain --features 5000 in 16 KiB slots exited $rc: $out"
    grep -qF "copies the others' results but reads the last, 3620 B, whole" <<<"$out" ||
      fail "--explain in 16 KiB slots: the launch line does not say the last round is whole: $out"
    grep -qF "its last round is under" <<<"$out" || fail "--explain in 16 KiB slots: no word on the whole last round: $out"
    expect_row "after step 1/3 reduce-scatter" 111 10 100
    expect_row "after step 2/3 all-gather" 111 111 111
    expect_row "after step 3/3 shared memory" 111 111 111
    echo "ok: --explain, the same bucket in 16 KiB slots: one scattered round, the short last one whole"
    expect_error 1 "--explain reads the values from host memory" 2 --explain --device cuda
    ;;
  timeline)
    # RINGDP_TIMELINE: one Chrome trace per rank that parses and holds every bucket's launch and
    # completion, the hooks, autograd's nodes and the collectives' steps; then the picture.
    export RINGDP_TIMELINE="$work/tl"
    run 4 --model mlp --hidden 64,64 --epochs 2 --bucket-mb 0.01
    unset RINGDP_TIMELINE
    [ $rc -eq 0 ] || fail "training with RINGDP_TIMELINE exited $rc: $out"
    python3 - "$work" <<'PY' || fail "the timeline files are not what docs/ddp.md describes"
import json, sys
work = sys.argv[1]
for rank in range(4):
    path = f"{work}/tl.rank{rank}.json"
    events = json.load(open(path))["traceEvents"]
    assert all(e["pid"] == rank for e in events), f"{path}: an event of another pid"
    begins = {e["id"] for e in events if e["ph"] == "b" and e["cat"] == "bucket"}
    ends = {e["id"] for e in events if e["ph"] == "e" and e["cat"] == "bucket"}
    hooks = [e for e in events if e.get("cat") == "hook"]
    nodes = [e for e in events if e.get("cat") == "backward"]
    steps = [e for e in events if e.get("cat") == "step" and e["tid"] == 3]
    collectives = [e for e in events if e.get("cat") == "collective"]
    backwards = [e for e in events if e.get("name") == "loss.backward()"]
    assert len(backwards) == 2, f"{path}: {len(backwards)} backward passes, expected 2 (one per epoch)"
    assert len(begins) >= 2 and begins == ends, f"{path}: bucket begins {begins}, ends {ends}"
    assert len(hooks) == 2 * 6, f"{path}: {len(hooks)} hooks, expected 12 (6 parameters, 2 steps)"
    assert nodes and steps and collectives, f"{path}: no backward nodes, steps or collectives"
    print(f"ok: rank {rank}: {len(begins)} buckets, {len(hooks)} hooks, {len(nodes)} nodes, {len(steps)} steps")
PY
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
      "$(dirname "$0")/../../scripts/plot-timeline" "$work/step.png" "$work"/tl.rank*.json ||
        fail "scripts/plot-timeline failed"
      [ -s "$work/step.png" ] || fail "scripts/plot-timeline wrote no PNG"
      echo "ok: scripts/plot-timeline drew $(stat -c %s "$work/step.png") bytes of PNG"
    else
      echo "SKIPPED: the trace holds, but no plot was drawn: no python3-matplotlib here (scripts/test installs it)"
      exit 77
    fi
    ;;
  timeline-spans)
    # The spans docs/ddp.md's hook, Join and ZeRO pictures are drawn from, in real runs: a comm
    # hook's own work per bucket apart from its collectives, a joined rank's shadow all-reduces of
    # zeros, ZeRO's reduce-scatter, shard step and all-gather. Then the Join picture, whose joined
    # ranks have no backward in the drawn step.
    check_spans() {  # check_spans NP WHAT EXPECTED_SPAN...: each rank's trace holds every span
      /usr/bin/python3 - "$work" "$@" <<'PY' || fail "RINGDP_TIMELINE of $2 lacks a span docs/ddp.md draws"
import json, sys
work, np, what, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
for rank in range(np):
    events = json.load(open(f"{work}/tl.rank{rank}.json"))["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e["tid"] == 1]
    for name in expected:
        found = [e for e in spans if e["name"] == name]
        assert found, f"rank {rank}: no '{name}' span on the training thread after {what}"
        if name.startswith(("fp16", "powersgd")):  # per bucket: every bucket of the last step
            assert {e["args"]["bucket"] for e in found} == {0, 1}, f"rank {rank}: '{name}' buckets {found}"
print(f"ok: {what}: every rank's trace holds {', '.join(expected)}")
PY
    }
    mlp=(--model mlp --hidden 64,64 --epochs 1 --bucket-mb 0.01)
    for hook in fp16 powersgd:1:0; do
      rm -f "$work"/tl.rank*.json
      RINGDP_TIMELINE="$work/tl" run 2 "${mlp[@]}" --comm-hook $hook
      [ $rc -eq 0 ] || fail "--comm-hook $hook with RINGDP_TIMELINE exited $rc: $out"
      case $hook in
        fp16) check_spans 2 "--comm-hook fp16" "fp16: cast, divide" "fp16: cast back" ;;
        *) check_spans 2 "--comm-hook $hook" "powersgd: P = M Q" "powersgd: Q = M^T P" "powersgd: M = P Q^T" ;;
      esac
    done
    awk 'BEGIN { print "x,y"; for (i = 1; i <= 10; i++) print i / 10 "," 3 * i / 10 + 1 }' >"$work/ten.csv"
    rm -f "$work"/tl.rank*.json
    RINGDP_TIMELINE="$work/tl" run 3 --data "$work/ten.csv" --batch-size 1 --uneven join --epochs 1
    [ $rc -eq 0 ] || fail "--uneven join with RINGDP_TIMELINE exited $rc: $out"
    # Ranks 1 and 2 (3 samples each) join while rank 0 (4) takes its last step.
    check_spans 3 "--uneven join" "join: counts" "join: counts (joined)" "join: final model broadcast"
    /usr/bin/python3 - "$work" <<'PY' || fail "--uneven join: the joined ranks' shadow all-reduces are not in their traces"
import json, sys
for rank in range(3):
    events = json.load(open(f"{sys.argv[1]}/tl.rank{rank}.json"))["traceEvents"]
    shadows = [e for e in events if e.get("name") == "shadow all_reduce of zeros"]
    assert len(shadows) == (0 if rank == 0 else 1), f"rank {rank}: {len(shadows)} shadow all-reduces"
print("ok: --uneven join: ranks 1 and 2 each shadow one bucket's all-reduce with zeros, rank 0 none")
PY
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
      "$(dirname "$0")/../../scripts/plot-timeline" "$work/join.png" "$work"/tl.rank*.json --whole-step ||
        fail "scripts/plot-timeline --whole-step failed on a Join step"
      echo "ok: scripts/plot-timeline drew the Join step"
    fi
    rm -f "$work"/tl.rank*.json
    RINGDP_TIMELINE="$work/tl" run 2 "${mlp[@]}" --optimizer adam --zero
    [ $rc -eq 0 ] || fail "--zero with RINGDP_TIMELINE exited $rc: $out"
    check_spans 2 "--optimizer adam --zero" "reduce_scatter gradients" "step shard" "all_gather parameters"
    ;;
  seed-fixed)
    # docs/examples/seed_fixed.py (PyTorch DDP, gloo) and ringdp-train on the same data, initial
    # weights and shards end with the same parameters. Needs Debian's python3-torch.
    torch_python=/usr/bin/python3
    if ! "$torch_python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
      echo "SKIPPED: no python3-torch with gloo (apt-get install python3-torch)"
      exit 77
    fi
    script="$(dirname "$0")/../../docs/examples/seed_fixed.py"
    "$torch_python" - "$work" <<'PY'
import random, sys, json
work = sys.argv[1]
rng = random.Random(7)
w = [rng.gauss(0, 1) for _ in range(10)]
with open(f"{work}/data.csv", "w") as f:
    f.write(",".join(f"x{i}" for i in range(10)) + ",y\n")
    for _ in range(400):
        x = [rng.gauss(0, 1) for _ in range(10)]
        f.write(",".join(f"{v:.6f}" for v in x) + f",{sum(a * b for a, b in zip(w, x)) + 0.5:.6f}\n")
json.dump({"weight": {"shape": [1, 10], "data": [rng.uniform(-0.3, 0.3) for _ in range(10)]},
           "bias": {"shape": [1], "data": [0.1]}}, open(f"{work}/init.json", "w"))
PY
    common=(--data "$work/data.csv" --init "$work/init.json" --no-shuffle --epochs 10 --lr 0.01)
    run 4 "${common[@]}" --export "$work/ringdp.json"
    [ $rc -eq 0 ] || fail "ringdp-train exited $rc: $out"
    ringdp_out=$out
    port=$(free_port)
    out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$mpiexec" -n 4 "${launch_args[@]}" \
      "$torch_python" "$script" "${common[@]}" --export "$work/torch.json" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "seed_fixed.py under $mpiexec exited $rc: $out"
    [ "$(tail -n 1 <<<"$out")" = "Finished training" ] || fail "seed_fixed.py did not finish: $out"
    "$torch_python" - "$work" <<'PY' || fail "ringdp and PyTorch disagree; ringdp: $ringdp_out; PyTorch: $out"
import json, sys
work = sys.argv[1]
a, b = json.load(open(f"{work}/ringdp.json")), json.load(open(f"{work}/torch.json"))
assert a.keys() == b.keys(), (a.keys(), b.keys())
worst = max(abs(x - y) / max(1.0, abs(y)) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
assert worst < 1e-5, f"worst relative difference {worst:.2e}"
print(f"ok: ringdp-train and PyTorch DDP (seed_fixed.py), 4 ranks, 10 epochs: parameters agree, "
      f"worst relative difference {worst:.2e}")
PY
    # The logged losses too (each side's mean over ranks of its float32 batch losses).
    paste <(grep '^epoch' <<<"$ringdp_out" | awk '{print $2, $4}') <(grep '^epoch' <<<"$out" | awk '{print $4}') |
      awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 1e-5 * ($3 > 1 ? $3 : 1)) { bad = 1; print "epoch " $1 ": ringdp " $2 ", PyTorch " $3 } }
           END { exit bad }' || fail "the epoch losses of ringdp and PyTorch differ by more than 1e-5"
    echo "ok: the 10 epoch losses agree within 1e-5 (last: $(grep '^epoch 10/' <<<"$ringdp_out" | awk '{print $4}'))"
    ;;
  seed-fixed-repeat)
    # docs/examples/seed_fixed.py with its own initial weights (no --init), run twice: the same
    # losses both times (its Linear was built unseeded, so every run printed other losses).
    torch_python=/usr/bin/python3
    if ! "$torch_python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
      echo "SKIPPED: no python3-torch with gloo (apt-get install python3-torch)"
      exit 77
    fi
    script="$(dirname "$0")/../../docs/examples/seed_fixed.py"
    losses=()
    for attempt in 1 2; do
      port=$(free_port)
      out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$mpiexec" -n 2 "${launch_args[@]}" \
        "$torch_python" "$script" --epochs 3 2>&1)
      rc=$?
      [ $rc -eq 0 ] || fail "seed_fixed.py (run $attempt) exited $rc: $out"
      losses+=("$(grep '^epoch' <<<"$out")")
      [ -n "${losses[-1]}" ] || fail "seed_fixed.py printed no epoch line: $out"
    done
    [ "${losses[0]}" = "${losses[1]}" ] || fail "two runs of seed_fixed.py print different losses:
${losses[0]}
---
${losses[1]}"
    echo "ok: seed_fixed.py prints the same losses twice: $(tr '\n' ' ' <<<"${losses[0]}")"
    ;;
  optimizer)
    # --optimizer adam and adamw train; flags that do not apply, and bad values, are refused by value.
    for o in adam adamw; do
      run 2 --optimizer "$o" --epochs 3 --betas 0.8,0.99 --eps 1e-6 --weight-decay 0.01
      [ $rc -eq 0 ] && [ "$(tail -n 1 <<<"$out")" = "Finished training" ] || fail "--optimizer $o failed: $out"
    done
    echo "ok: --optimizer adam and adamw train with --betas, --eps and --weight-decay"
    expect_error 2 "--optimizer: 'adagrad' is not an optimizer: expected sgd, adam or adamw" 2 --optimizer adagrad
    expect_error 2 "--betas: '0.9' is not two numbers B1,B2, each in [0, 1)" 2 --optimizer adam --betas 0.9
    expect_error 2 "--betas: '0.9,1' is not two numbers B1,B2, each in [0, 1)" 2 --optimizer adam --betas 0.9,1
    expect_error 2 "--eps: '-1' must be zero or positive" 2 --optimizer adam --eps -1
    expect_error 1 "--momentum 0.9 applies to --optimizer sgd only; adam takes --betas" 2 --optimizer adam --momentum 0.9
    expect_error 1 "--betas applies to --optimizer adam or adamw, not sgd" 2 --betas 0.9,0.99
    expect_error 1 "with --optimizer adamw add --zero" 2 --optimizer adamw --explain
    out=$("$train" --help) || fail "--help exited non-zero"
    for flag in --optimizer --betas --eps --weight-decay --zero; do
      grep -qF -- "$flag" <<<"$out" || fail "--help does not list $flag"
    done
    # Adam's state (exp_avg, exp_avg_sq, step) goes through the checkpoint: resumed at epoch 3 of 6,
    # the run ends bit-identical to an uninterrupted one; so does a --zero run, whose checkpoint
    # is gathered from the shards into the same layout (so either kind resumes the other).
    common=(--model mlp --hidden 7 --batch-size 30 --optimizer adamw --weight-decay 0.05 --lr 0.005)
    for z in "" --zero; do
      run 3 "${common[@]}" $z --epochs 6 --export "$work/straight$z.json"
      [ $rc -eq 0 ] || fail "uninterrupted run $z failed: $out"
      run 3 "${common[@]}" $z --epochs 3 --checkpoint "$work/ck$z.bin"
      [ $rc -eq 0 ] || fail "first half $z failed: $out"
      run 3 "${common[@]}" $z --epochs 6 --checkpoint "$work/ck$z.bin" --resume --export "$work/resumed$z.json"
      [ $rc -eq 0 ] && grep -q '^epoch 4/6' <<<"$out" || fail "resume $z failed: $out"
      cmp -s "$work/straight$z.json" "$work/resumed$z.json" || fail "resumed $z parameters differ from the uninterrupted run"
      echo "ok: adamw ${z:-(plain)} resumed at epoch 4 of 6 ends bit-identical to an uninterrupted run"
    done
    run 3 "${common[@]}" --epochs 6 --checkpoint "$work/ck--zero.bin" --resume --export "$work/crossed.json"
    [ $rc -eq 0 ] || fail "a plain run did not resume from a --zero checkpoint: $out"
    expect_error 1 "unexpected entry 'exp_avg.0'" 3 --model mlp --hidden 7 --epochs 6 --momentum 0.9 \
      --checkpoint "$work/ck.bin" --resume
    echo "ok: a --zero checkpoint resumes a plain run; an Adam checkpoint is refused by SGD, naming the entry"
    ;;
  zero)
    # --zero equals plain DDP with the same optimizer (float tolerance), at 1-4 ranks and a
    # parameter count (85) no world size divides; it prints each rank's state against unsharded.
    common=(--model mlp --hidden 7 --batch-size 20 --epochs 4 --lr 0.01)
    for np in 1 2 3 4; do
      for o in "--momentum 0.9" "--optimizer adam" "--optimizer adamw --weight-decay 0.1"; do
        run $np "${common[@]}" $o --export "$work/plain.json"
        [ $rc -eq 0 ] || fail "plain $o on $np ranks failed: $out"
        run $np "${common[@]}" $o --zero --export "$work/zero.json"
        [ $rc -eq 0 ] || fail "--zero $o on $np ranks failed: $out"
        /usr/bin/python3 - "$work/plain.json" "$work/zero.json" <<'PY' || fail "--zero $o on $np ranks differs from plain DDP"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
worst = max(abs(x - y) / max(1.0, abs(y)) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
sys.exit(0 if a.keys() == b.keys() and worst < 1e-5 else f"worst relative difference {worst:.2e}")
PY
      done
      echo "ok: --zero equals plain DDP on $np rank(s) for sgd with momentum, adam and adamw"
    done
    run 3 "${common[@]}" --optimizer adam --zero
    want="zero: 85 parameters in 3 shards of 29 (2 padding); adam state per rank: 232 B, 232 B, 232 B (unsharded: 680 B on every rank; 1/3 of it is 226.7 B)"
    grep -qxF "$want" <<<"$out" || fail "no '$want' in: $out"
    echo "ok: $want"
    # --explain --zero: the shard boundaries, one inside 0.weight, the last shard's padding.
    run 3 --model mlp --hidden 7 --optimizer adam --zero --explain
    [ $rc -eq 0 ] || fail "--explain --zero exited $rc: $out"
    for line in "   rank 1  [29, 58)  0.weight[29:58)" \
                "   rank 2  [58, 87)  0.weight[58:70) + 0.bias[0:7) + 2.weight[0:7) + 2.bias[0:1) + padding[85:87)" \
                "4. reduce_scatter(avg) of the flat gradients: element 58 lies in rank 2's shard"; do
      grep -qF -- "$line" <<<"$out" || fail "--explain --zero: no '$line' in: $out"
    done
    echo "ok: --explain --zero shows the shard boundaries and the owner's step"
    ;;
  torch-adam)
    # ringdp-train --optimizer adam/adamw, with and without --zero, against PyTorch 1.13's DDP with
    # torch.optim.Adam/AdamW and with ZeroRedundancyOptimizer over them (gloo), from the same data
    # and initial weights: the same parameters within float32 tolerance. Needs python3-torch.
    torch_python=/usr/bin/python3
    if ! "$torch_python" -c 'import torch.distributed as d; from torch.distributed.optim import ZeroRedundancyOptimizer; assert d.is_gloo_available()' 2>/dev/null; then
      echo "SKIPPED: no python3-torch with gloo and ZeroRedundancyOptimizer (apt-get install python3-torch)"
      exit 77
    fi
    "$torch_python" - "$work" <<'PY'
import random, sys, json
work = sys.argv[1]
rng = random.Random(11)
w = [rng.gauss(0, 1) for _ in range(10)]
with open(f"{work}/data.csv", "w") as f:
    f.write(",".join(f"x{i}" for i in range(10)) + ",y\n")
    for _ in range(240):
        x = [rng.gauss(0, 1) for _ in range(10)]
        f.write(",".join(f"{v:.6f}" for v in x) + f",{sum(a * b for a, b in zip(w, x)) + 0.5:.6f}\n")
init = {"0.weight": {"shape": [6, 10], "data": [rng.uniform(-0.3, 0.3) for _ in range(60)]},
        "0.bias": {"shape": [6], "data": [rng.uniform(-0.3, 0.3) for _ in range(6)]},
        "2.weight": {"shape": [1, 6], "data": [rng.uniform(-0.4, 0.4) for _ in range(6)]},
        "2.bias": {"shape": [1], "data": [0.1]}}
json.dump(init, open(f"{work}/init.json", "w"))
PY
    script="$(dirname "$0")/torch_optim.py"
    for np in 3 4; do
      # The last: every optimizer flag left to its default, which must be torch.optim.AdamW's (lr
      # 0.001, weight decay 0.01; ringdp-train had 0.01 and 0, issue #48 item 9).
      for o in "--optimizer adam --lr 0.01" "--optimizer adamw --lr 0.01 --weight-decay 0.1 --betas 0.8,0.99 --eps 1e-6" \
        "--optimizer adamw"; do
        [ $np -eq 4 ] && [ "$o" = "--optimizer adamw" ] && continue
        for z in "" --zero; do
          common=(--data "$work/data.csv" --init "$work/init.json" --hidden 6 --epochs 5 --batch-size 20 $o $z)
          run $np --model mlp --no-shuffle "${common[@]}" --export "$work/ringdp.json"
          [ $rc -eq 0 ] || fail "ringdp-train ${common[*]} exited $rc: $out"
          port=$(free_port)
          out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$mpiexec" -n $np "${launch_args[@]}" \
            "$torch_python" "$script" "${common[@]}" --export "$work/torch.json" 2>&1)
          [ $? -eq 0 ] || fail "torch_optim.py ${common[*]} failed: $out"
          "$torch_python" - "$work" "np=$np $o ${z:-(DDP)}" <<'PY' || fail "ringdp and PyTorch disagree: np=$np $o $z"
import json, sys
work, what = sys.argv[1:]
a, b = json.load(open(f"{work}/ringdp.json")), json.load(open(f"{work}/torch.json"))
assert a.keys() == b.keys(), (a.keys(), b.keys())
diff = max(abs(x - y) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
rel = max(abs(x - y) / max(1.0, abs(y)) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
assert rel < 1e-5, f"{what}: worst relative difference {rel:.2e}"
print(f"ok: {what}: ringdp-train and PyTorch 1.13, 5 epochs: max abs difference {diff:.2e}")
PY
        done
      done
    done
    ;;
  uneven)
    # --uneven join: 10 samples on 3 ranks (4, 3, 3) or 4 ranks (3, 3, 2, 2), every sample once per
    # epoch; the ranks out of batches join. Rank r's step k takes the shuffled positions
    # r + N(kb + j), j < b, so step k of all ranks together is the one process's batch of N·b
    # positions: the same parameters within float32 tolerance (--uneven pad repeats samples, so
    # it may not). The loss line counts every step of every rank.
    awk 'BEGIN { srand(5); print "a,b,c,y"; for (i = 0; i < 10; i++) { a = rand(); b = rand(); c = rand();
                 printf "%.5f,%.5f,%.5f,%.5f\n", a, b, c, 2 * a - b + 0.5 * c + 0.1 } }' >"$work/ten.csv"
    common=(--data "$work/ten.csv" --model mlp --hidden 5 --epochs 4 --momentum 0.9 --lr 0.05)
    compare() {
      /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
worst = max(abs(x - y) / max(1.0, abs(y)) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
print(f"{worst:.2e}")
sys.exit(0 if a.keys() == b.keys() and worst < 1e-5 else 1)
PY
    }
    for layout in "3 1" "4 2"; do
      read -r np b <<<"$layout"
      run 1 "${common[@]}" --batch-size $((np * b)) --export "$work/one.json"
      [ $rc -eq 0 ] || fail "one process failed: $out"
      run $np "${common[@]}" --batch-size $b --uneven join --find-unused-parameters --export "$work/join.json"
      [ $rc -eq 0 ] && [ "$(tail -n 1 <<<"$out")" = "Finished training" ] || fail "--uneven join on $np ranks failed: $out"
      worst=$(compare "$work/one.json" "$work/join.json") || fail "--uneven join on $np ranks differs from one process by $worst"
      run $np "${common[@]}" --batch-size $b --export "$work/pad.json"
      [ $rc -eq 0 ] || fail "--uneven pad on $np ranks failed: $out"
      pad=$(compare "$work/one.json" "$work/pad.json") && fail "--uneven pad on $np ranks equals one process ($pad): the test cannot tell"
      echo "ok: --uneven join on $np ranks, batch $b, equals one process with batch $((np * b)) (worst $worst; pad: $pad)"
    done
    expect_error 1 "--uneven join does not work with --zero" 2 --uneven join --zero
    expect_error 2 "--uneven: even not in" 2 --uneven even
    ;;
  torch-join)
    # ringdp-train --uneven join against PyTorch 1.13's DDP under Join(divide_by_initial_world_size=False)
    # (tests/cli/torch_join.py) from the same data and initial weights: 53 rows on 3 and 4 ranks, so
    # shards and batch counts differ. SGD without momentum for 3 epochs, and with momentum for one
    # (PyTorch's joined ranks do not step their optimizer). Needs python3-torch.
    torch_python=/usr/bin/python3
    if ! "$torch_python" -c 'import torch.distributed as d; from torch.distributed.algorithms.join import Join; assert d.is_gloo_available()' 2>/dev/null; then
      echo "SKIPPED: no python3-torch with gloo and Join (apt-get install python3-torch)"
      exit 77
    fi
    "$torch_python" - "$work" <<'PY'
import random, sys, json
work = sys.argv[1]
rng = random.Random(7)
with open(f"{work}/data.csv", "w") as f:
    f.write("a,b,c,d,y\n")
    for _ in range(53):
        x = [rng.gauss(0, 1) for _ in range(4)]
        f.write(",".join(f"{v:.6f}" for v in x) + f",{x[0] - 2 * x[1] + 0.5 * x[2] * x[3] + 0.3:.6f}\n")
init = {"0.weight": {"shape": [5, 4], "data": [rng.uniform(-0.5, 0.5) for _ in range(20)]},
        "0.bias": {"shape": [5], "data": [rng.uniform(-0.5, 0.5) for _ in range(5)]},
        "2.weight": {"shape": [1, 5], "data": [rng.uniform(-0.4, 0.4) for _ in range(5)]},
        "2.bias": {"shape": [1], "data": [0.1]}}
json.dump(init, open(f"{work}/init.json", "w"))
PY
    for np in 3 4; do
      for o in "--epochs 3 --lr 0.05" "--epochs 1 --lr 0.05 --momentum 0.9"; do
        common=(--data "$work/data.csv" --init "$work/init.json" --hidden 5 --batch-size 4 $o)
        run $np --model mlp --no-shuffle --uneven join "${common[@]}" --export "$work/ringdp.json"
        [ $rc -eq 0 ] || fail "ringdp-train ${common[*]} exited $rc: $out"
        out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) timeout 120 "$mpiexec" -n $np \
          "${launch_args[@]}" "$torch_python" "$(dirname "$0")/torch_join.py" "${common[@]}" --export "$work/torch.json" 2>&1)
        [ $? -eq 0 ] || fail "torch_join.py ${common[*]} failed: $out"
        "$torch_python" - "$work" "np=$np $o" <<'PY' || fail "ringdp and PyTorch disagree: np=$np $o"
import json, sys
work, what = sys.argv[1:]
a, b = json.load(open(f"{work}/ringdp.json")), json.load(open(f"{work}/torch.json"))
assert a.keys() == b.keys(), (a.keys(), b.keys())
rel = max(abs(x - y) / max(1.0, abs(y)) for k in a for x, y in zip(a[k]["data"], b[k]["data"]))
assert rel < 1e-5, f"{what}: worst relative difference {rel:.2e}"
print(f"ok: --uneven join, {what}: ringdp-train and PyTorch 1.13's Join agree within {rel:.1e}")
PY
      done
    done
    ;;
  explain-join)
    # --explain --uneven join: 10 samples on 3 ranks, batches of 1: at step 4 ranks 1 and 2 have
    # joined and add zeros, the divisor is 1 and the average is rank 0's own value; the ranks end
    # with equal parameters (momentum included, since joined ranks step their optimizer).
    awk 'BEGIN { print "x,y"; for (i = 1; i <= 10; i++) print i / 10 "," 3 * i / 10 + 1 }' >"$work/ten.csv"
    run 3 --data "$work/ten.csv" --batch-size 1 --uneven join --momentum 0.9 --explain
    [ $rc -eq 0 ] || fail "--explain --uneven join exited $rc: $out"
    line=$(grep -E '^ +4 ' <<<"$out") || fail "no step 4 in: $out"
    read -r step r0 z1 j1 z2 j2 divisor average <<<"$line"
    [ "$z1 $j1 $z2 $j2 $divisor" = "0 (joined) 0 (joined) 1" ] && [ "$r0" = "$average" ] ||
      fail "step 4 should show ranks 1 and 2 joined (zeros), divisor 1, the average rank 0's value: '$line'"
    grep -qF "     rank 0: 4 samples, 4 steps of at most 1" <<<"$out" || fail "no shard line for rank 0 in: $out"
    grep -qF "largest difference from rank 0's parameters 0." <<<"$out" || fail "the ranks' parameters differ: $out"
    echo "ok: --explain --uneven join shows the joined ranks' zeros and the divisor: $line"
    ;;
  comm-hook)
    # --comm-hook: each hook trains (the loss falls), PowerSGD reports its compression, and bad
    # values or --zero with a hook are refused.
    for hook in fp16 bf16 powersgd:1 powersgd:2:0; do
      run 3 --model mlp --hidden 16,16 --epochs 5 --comm-hook $hook
      [ $rc -eq 0 ] || fail "--comm-hook $hook exited $rc: $out"
      first=$(grep '^epoch 1/' <<<"$out" | awk '{print $4}')
      last=$(grep '^epoch 5/' <<<"$out" | awk '{print $4}')
      awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "--comm-hook $hook: loss did not fall: $first -> $last"
      case $hook in powersgd*) grep -qE '^PowerSGD rank [12] \(from step [02]\): compression rate [0-9.]+$' <<<"$out" ||
        fail "--comm-hook $hook: no compression line in: $out" ;; esac
      echo "ok: --comm-hook $hook on 3 ranks: loss $first -> $last"
    done
    expect_error 2 "'powersgd:0' is not a comm hook: expected none, fp16, bf16" 2 --comm-hook powersgd:0
    expect_error 2 "'fp32' is not a comm hook" 2 --comm-hook fp32
    expect_error 1 "--comm-hook fp16 with --zero" 2 --zero --comm-hook fp16
    ;;
  explain-hook)
    # --explain --comm-hook: bucket 0 rank by rank through the cast, or PowerSGD's applied value and
    # kept error. The numbers are checked where they can be: the cast row is the float32 value in
    # float16, halved on 2 ranks (to the 8 digits printed).
    run 2 --model mlp --explain --comm-hook fp16
    [ $rc -eq 0 ] || fail "--explain --comm-hook fp16 exited $rc: $out"
    for line in "1. Each bucket goes through fp16 compression instead of the plain all-reduce (avg)." \
                "the hook's collectives carried 386 B" "cast to float16" "/ 2 in float16" "summed, back in float32"; do
      grep -qF -- "$line" <<<"$out" || fail "--explain --comm-hook fp16: no '$line' in: $out"
    done
    read -r cast_a _ < <(grep -m1 'cast to float16' <<<"$out" | awk '{print $4, $5}')
    read -r half_a _ < <(grep -m1 '/ 2 in float16' <<<"$out" | awk '{print $5, $6}')
    awk -v c="$cast_a" -v h="$half_a" 'BEGIN { d = c / 2 - h; exit !(d < 1e-7 && d > -1e-7) }' || fail "halving: $cast_a / 2 != $half_a in: $out"
    run 2 --model mlp --explain --comm-hook powersgd:1
    [ $rc -eq 0 ] || fail "--explain --comm-hook powersgd:1 exited $rc: $out"
    for line in "after PowerSGD (applied)" "error kept for the next step" "from step 0 here, so that this one step is compressed"; do
      grep -qF -- "$line" <<<"$out" || fail "--explain --comm-hook powersgd:1: no '$line' in: $out"
    done
    echo "ok: --explain --comm-hook fp16 and powersgd:1 tell bucket 0 through the hook"
    ;;
  comm-hook-torch)
    # ringdp-train --comm-hook fp16/bf16 against PyTorch 1.13's DDP with fp16_compress_hook (and, as
    # gloo has no bfloat16 all-reduce, bf16_compress_hook's steps with the sum done in rank order:
    # tests/cli/torch_comm_hook.py) from the same data and initial weights, on 2 and 4 ranks. Where
    # the compressed additions happen in the same order (2 ranks: one addition; bf16 on 4 ranks:
    # ringdp's shared-memory all-reduce adds in rank order, as the emulation does) the hooked runs
    # must agree to float32 rounding and far more closely than either agrees with the other's
    # unhooked run, so the comparison sees the compression. fp16 on 4 ranks: gloo's ring adds in an
    # order of its own, and one float16 rounding of a partial sum differs as much as the compression
    # does, so only a bound. Needs python3-torch.
    torch_python=/usr/bin/python3
    if ! "$torch_python" -c 'import torch.distributed as d; from torch.distributed.algorithms.ddp_comm_hooks import default_hooks; assert d.is_gloo_available()' 2>/dev/null; then
      echo "SKIPPED: no python3-torch with gloo and ddp_comm_hooks (apt-get install python3-torch)"
      exit 77
    fi
    "$torch_python" - "$work" <<'PY'
import random, sys, json
work = sys.argv[1]
rng = random.Random(12)
w = [rng.gauss(0, 1) for _ in range(10)]
with open(f"{work}/data.csv", "w") as f:
    f.write(",".join(f"x{i}" for i in range(10)) + ",y\n")
    for _ in range(240):
        x = [rng.gauss(0, 1) for _ in range(10)]
        f.write(",".join(f"{v:.6f}" for v in x) + f",{sum(a * b for a, b in zip(w, x)) + 0.5:.6f}\n")
init = {"0.weight": {"shape": [8, 10], "data": [rng.uniform(-0.3, 0.3) for _ in range(80)]},
        "0.bias": {"shape": [8], "data": [rng.uniform(-0.3, 0.3) for _ in range(8)]},
        "2.weight": {"shape": [1, 8], "data": [rng.uniform(-0.4, 0.4) for _ in range(8)]},
        "2.bias": {"shape": [1], "data": [0.1]}}
json.dump(init, open(f"{work}/init.json", "w"))
PY
    script="$(dirname "$0")/torch_comm_hook.py"
    for np in 2 4; do
      for hook in none fp16 bf16; do
        common=(--data "$work/data.csv" --init "$work/init.json" --hidden 8 --epochs 4 --batch-size 15 --lr 0.02)
        run $np --model mlp --no-shuffle "${common[@]}" --algo shared_memory --comm-hook $hook \
          --export "$work/ringdp-$hook.json"
        [ $rc -eq 0 ] || fail "ringdp-train ${common[*]} --comm-hook $hook exited $rc: $out"
        port=$(free_port)
        out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$mpiexec" -n $np "${launch_args[@]}" \
          "$torch_python" "$script" "${common[@]}" --comm-hook $hook --export "$work/torch-$hook.json" 2>&1)
        trc=$?
        [ $trc -eq 0 ] || fail "torch_comm_hook.py ${common[*]} --comm-hook $hook exited $trc: $out"
      done
      "$torch_python" - "$work" "$np" <<'PY' || fail "ringdp and PyTorch disagree on $np ranks"
import json, sys
work, np = sys.argv[1:]
def load(who, hook):
    d = json.load(open(f"{work}/{who}-{hook}.json"))
    return [v for k in sorted(d) for v in d[k]["data"]]
def rel(a, b):
    return max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))
# float32 alone: ringdp's and PyTorch's kernels round differently in the last bits (3e-8 here).
# A hook magnifies that: a gradient one float32 bit apart can round to the neighbouring float16,
# 2^-11 away, so hooked runs agree less closely (fp16 on 2 ranks: 1.2e-6 on 2026-12-03's machine,
# under 1e-6 on the one before). Hence one float32 bound for all, with the 10x separation below
# showing that the compression is seen.
FLOAT32 = 1e-5
base = rel(load("ringdp", "none"), load("torch", "none"))
assert base < FLOAT32, f"np={np} no hook: {base:.2e}"
for hook in ("fp16", "bf16"):
    same = rel(load("ringdp", hook), load("torch", hook))
    crossed = min(rel(load("ringdp", hook), load("torch", "none")), rel(load("ringdp", "none"), load("torch", hook)))
    if np == "2" or hook == "bf16":
        assert same < FLOAT32 and same * 10 < crossed, f"np={np} {hook}: {same:.2e} against PyTorch's {hook}, {crossed:.2e} against no hook"
    else:
        assert same < 5e-4, f"np={np} {hook}: {same:.2e} against PyTorch's {hook}"
    print(f"ok: np={np} --comm-hook {hook}: ringdp-train and PyTorch 1.13 within {same:.2e} (4 epochs); {crossed:.2e} from the unhooked run; no hook: {base:.2e}")
PY
    done
    ;;
  *) fail "unknown case $case_name" ;;
esac
