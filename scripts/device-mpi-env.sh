# Sourced by the scripts that run banyan under mpirun on a device machine
# (gpu-scaling.sh, cost-visit-sweep.sh, rank-gpu-swap.sh,
# remote-walk-ab.sh): Open MPI as root, oversubscribed, without the
# single-copy mechanism; never NVLink multicast (shared machines); NCCL
# from BANYAN_NCCL_LIBRARY, else the Python package nvidia-nccl's
# (PyTorch's), else the loader's path. TUNED: issue 18's tree settings.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
if [ -z "${BANYAN_NCCL_LIBRARY:-}" ]; then
    d=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
    [ -n "$d" ] && [ -f "$d/lib/libnccl.so.2" ] && export BANYAN_NCCL_LIBRARY=$d/lib/libnccl.so.2
fi
TUNED="--theta 0.67 --mac bonsai-box --leaf-size 32 --group-size 256 --group-expansion 0.4"
