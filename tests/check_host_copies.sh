#!/bin/bash
# Every copy from the device to the host goes through bn_cuda_read
# (src/core/cuda_memory.cu), which counts it: test_gpu_block's count of
# what a batch of steps copies is only complete if nothing bypasses it.
# usage: bash check_host_copies.sh SOURCE_DIR
set -u
hits=$(grep -rn --include='*.cu' --include='*.c' --include='*.h' -e 'DeviceToHost' -e 'cudaMemcpyDefault' \
    "$1/src" | grep -v '^[^:]*src/core/cuda_memory.cu:')
if [ -n "$hits" ]; then
    echo "FAIL: copies to the host that bypass bn_cuda_read:"
    echo "$hits"
    exit 1
fi
echo "every copy to the host goes through bn_cuda_read"
