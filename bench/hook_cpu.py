"""Whole-process wall and CPU time of `kit hook claude` without a shell (see bench/hook.sh).

Usage: python3 bench/hook_cpu.py KIT_BINARY WORK_DIR   (WORK_DIR as bench/hook.sh prepares it)
"""
import subprocess, time, statistics, resource, sys
kit = sys.argv[1]; work = sys.argv[2]
print('| transcript | wall median | CPU (user+sys) median | runs |')
print('|---|---:|---:|---:|')
for n, label in [('1m', '1 MB'), ('100m', '100 MB'), ('1g', '1 GB')]:
    ev = open(f'{work}/{n}.event.json', 'rb').read()
    walls, cpus = [], []
    for i in range(520):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([kit, 'hook', 'claude'], input=ev, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        w = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i >= 20:
            walls.append(w)
            cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    print(f'| {label} | {statistics.median(walls)*1e3:.2f} ms | {statistics.median(cpus)*1e3:.2f} ms | {len(walls)} |')
