# SLURM deployment (slurm_check.sh): a private one-node SLURM cluster runs
# the job template containers/ompc.sbatch on 1 head + 2 workers, with srun
# (Slurm's pmi2) and with mpiexec inside the allocation, for a conformance
# program and a small Task Bench graph; then an MPI program that offloads
# on 2 application ranks x 1 worker under srun.
#
# Installs slurm-wlm and munge when missing (root); exit 77 (skip) when not
# root.  Every wait in the script has its own limit (apt-get 180 + 420 s,
# munged and the node 60 s each, 5 jobs of 120 s, clean-up under 60 s);
# they add up to less than the CTest timeout, so the script, not CTest,
# stops a hung run and its daemons.  How long a normal run takes:
# docs/slurm.md, "The test".
add_test(NAME slurm_sbatch:np3
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm_check.sh
                 ${PROJECT_SOURCE_DIR}/containers/ompc.sbatch
                 ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/off_conf_stencil
                 ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/ompc-taskbench
                 ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/off_mpi_halo)
set_tests_properties(slurm_sbatch:np3 PROPERTIES
                     LABELS deploy
                     TIMEOUT 1500
                     SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE
                     ENVIRONMENT "${OMPC_TEST_ENV}")
