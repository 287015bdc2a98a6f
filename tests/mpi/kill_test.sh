#!/usr/bin/env bash
# Runs mpi_kill under mpirun -np 4 with a hard bound: passes if the job ends by itself, with a
# failure status, well before the bound (a hang would reach it).
#   kill_test.sh MPIRUN PROGRAM
set -uo pipefail
mpirun=$1 program=$2
start=$SECONDS
timeout -s KILL 120 "$mpirun" -np 4 --oversubscribe "$program"
status=$?
elapsed=$((SECONDS - start))
echo "mpirun exited with status $status after $elapsed s"
if [ $status -eq 0 ]; then echo "FAILED: the job succeeded although a rank was killed"; exit 1; fi
# Only the time tells a hang: mpirun itself exits 137 when it passes on the rank's SIGKILL.
if [ $elapsed -ge 110 ]; then echo "FAILED: the job hung until the bound"; exit 1; fi
echo "the job ended with an error, as it must"
