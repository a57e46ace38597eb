cmake -S . -B build-gpu -G Ninja -DDASH_ENABLE_COMPILER=OFF -DDASH_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release > $OUT/build.log 2>&1
cmake --build build-gpu -j 16 >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
B=build-gpu/bin/dash-bench
K=build/kernels
for d in 64; do for m in full causal; do
 timeout 120 $B --kernels $K --hdim $d --mask $m --policy all --det both --batch 2 --heads 4 --seqlen 1000 --repeats 3 --timeout-s 20 2>&1 | grep -E "^summary|FAIL|HANG"
 timeout 120 $B --kernels $K --hdim $d --mask $m --align top_left --policy all --det on --batch 2 --heads 4 --seqlen 1000 --seqlen-k 1500 --repeats 3 --timeout-s 20 2>&1 | grep -E "^summary|FAIL|HANG"
 timeout 120 $B --kernels $K --hdim $d --mask $m --align bottom_right --policy all --det on --batch 2 --heads 4 --seqlen 1500 --seqlen-k 1000 --repeats 3 --timeout-s 20 2>&1 | grep -E "^summary|FAIL|HANG"
 timeout 120 $B --kernels $K --hdim $d --mask $m --policy all --det on --batch 1 --heads 8 --heads-kv 2 --seqlen 777 --repeats 3 --timeout-s 20 2>&1 | grep -E "^summary|FAIL|HANG"
done; done 2>&1 | tee $OUT/small.log
for d in 64; do for m in causal full; do
timeout 200 $B --kernels $K --hdim $d --mask $m --policy all --det both --batch 4 --heads $((2048/d)) --seqlen 4096 --repeats 2 --timing 10 --timeout-s 30 2>&1 | grep -E "^d|^summary" 
done; done | tee $OUT/big.log
