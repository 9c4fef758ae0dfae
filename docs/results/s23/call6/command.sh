# after bash tests/bench/prepare_device.sh and bash tests/bench/prepare_ab.sh a_base 892043e b_new 4e3ff6c here;
# run on the machine call 5 had left warm
AB_PARTS=bench AB_ROUNDS=3 AB_STEPS=30 AB_TORCH=energy bash tests/bench/device_ab.sh
