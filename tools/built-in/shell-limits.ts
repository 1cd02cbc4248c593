import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SHELL_LIMITS } from '../../common/defaults';

/** The bounds one sandboxed shell command runs under; see SHELL_LIMITS. */
export type ShellLimits = { [K in keyof typeof SHELL_LIMITS]: number };

const CGROUP_ROOT = '/sys/fs/cgroup';
const GROUP_NAME = 'tollgate-shell';

/** Where per-call cgroups are made: a cgroup v2 folder with pids (and maybe memory), or the v1 pids hierarchy. */
export interface CgroupBase {
  kind: 'v2' | 'v1-pids';
  folder: string;
  memory: boolean;
}

/** Checks that every limit is a positive whole number, naming the first that is not. */
export function checkShellLimits(limits: ShellLimits): ShellLimits {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`shell limits: ${name} must be a positive whole number, got ${value}`);
  }
  return limits;
}

/**
 * The bash prologue run inside the sandbox before the command: hard rlimits for CPU time, address space, file size and
 * processes. Set inside the user namespace, RLIMIT_NPROC counts only the sandbox's own processes, not the user's others.
 */
export function rlimitPrologue(limits: ShellLimits): string {
  const kib = (bytes: number) => Math.max(1, Math.floor(bytes / 1024));
  // bash counts -v and -f in units of 1024 bytes. The hard CPU limit is a second above the soft one, so the command gets
  // SIGXCPU (which says why) rather than the SIGKILL that a hard limit reached sends.
  const memory = `-v ${kib(limits.addressSpaceBytes)} -f ${kib(limits.fileSizeBytes)}`;
  const hard = `ulimit -t ${limits.cpuSeconds + 1} ${memory} -u ${limits.processes}`;
  return `${hard} && ulimit -S -t ${limits.cpuSeconds} || exit 126`;
}

function controllersOf(folder: string): string[] {
  return readFileSync(path.join(folder, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
}

// A folder that exists (made earlier, by another user) may still refuse this user a child: make and remove one to know.
function probeChild(folder: string): void {
  const probe = path.join(folder, `probe-${randomUUID()}`);
  mkdirSync(probe);
  rmdirSync(probe);
}

function enable(folder: string, controllers: string[]): void {
  const active = readFileSync(path.join(folder, 'cgroup.subtree_control'), 'utf8').trim().split(/\s+/);
  const missing = controllers.filter((name) => !active.includes(name));
  if (missing.length > 0) writeFileSync(path.join(folder, 'cgroup.subtree_control'), missing.map((name) => `+${name}`).join(' '));
}

// cgroup v2: /sys/fs/cgroup/tollgate-shell, with pids and memory for its children.
function findV2(): CgroupBase | undefined {
  if (!existsSync(path.join(CGROUP_ROOT, 'cgroup.controllers'))) return undefined;
  const wanted = ['pids', 'memory'].filter((name) => controllersOf(CGROUP_ROOT).includes(name));
  if (!wanted.includes('pids')) return undefined;
  enable(CGROUP_ROOT, wanted);
  const folder = path.join(CGROUP_ROOT, GROUP_NAME);
  mkdirSync(folder, { recursive: true });
  enable(folder, wanted);
  probeChild(folder);
  return { kind: 'v2', folder, memory: wanted.includes('memory') };
}

// cgroup v1's pids hierarchy; memory is left to RLIMIT_AS there.
function findV1Pids(): CgroupBase | undefined {
  const hierarchy = path.join(CGROUP_ROOT, 'pids');
  if (!existsSync(path.join(hierarchy, 'cgroup.procs'))) return undefined;
  const folder = path.join(hierarchy, GROUP_NAME);
  mkdirSync(folder, { recursive: true });
  probeChild(folder);
  return { kind: 'v1-pids', folder, memory: false };
}

/**
 * The folder per-call cgroups go under, or why there is none. It sits at the root of the hierarchy, so it works wherever
 * the worker's own cgroup is (a systemd slice holds processes, so it cannot have children with controllers); each call's
 * cgroup sets its own pids.max and memory.max instead of those of the worker's cgroup. Creating one needs root.
 */
export function findCgroupBase(): CgroupBase | { reason: string } {
  const errors: string[] = [];
  for (const find of [findV2, findV1Pids]) {
    try {
      const base = find();
      if (base) return base;
    } catch (error) {
      errors.push((error as Error).message);
    }
  }
  return { reason: errors.length > 0 ? errors.join('; ') : 'no writable pids cgroup with the worker at its root' };
}

/** One call's cgroup: its command goes in through `wrap`; `kill` ends every process in it; `remove` kills and deletes it. */
export interface CallCgroup {
  folder: string;
  /** Prefixes an argv so the process first joins this cgroup and then execs the argv. */
  wrap(argv: string[]): string[];
  kill(): void;
  remove(): Promise<void>;
}

/** Makes the cgroup of one call under `base`, with its process and memory bounds written. */
export function createCallCgroup(base: CgroupBase, limits: ShellLimits): CallCgroup {
  const folder = path.join(base.folder, randomUUID());
  mkdirSync(folder);
  writeFileSync(path.join(folder, 'pids.max'), String(limits.processes));
  if (base.memory) {
    writeFileSync(path.join(folder, 'memory.max'), String(limits.memoryBytes));
    // Present only when the kernel accounts swap.
    if (existsSync(path.join(folder, 'memory.swap.max'))) writeFileSync(path.join(folder, 'memory.swap.max'), '0');
  }
  const procs = path.join(folder, 'cgroup.procs');
  const kill = () => {
    if (base.kind === 'v2' && existsSync(path.join(folder, 'cgroup.kill'))) {
      try {
        writeFileSync(path.join(folder, 'cgroup.kill'), '1');
      } catch {
        // Already removed.
      }
      return;
    }
    // cgroup v1 has no cgroup.kill: kill what is listed until nothing is (pids.max bounds how many can appear meanwhile).
    for (let round = 0; round < 100; round += 1) {
      const pids = readPids(procs);
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    }
  };
  return {
    folder,
    wrap: (argv) => ['sh', '-c', 'echo $$ > "$0" && exec "$@"', procs, ...argv],
    kill,
    async remove() {
      for (let attempt = 0; attempt < 100; attempt += 1) {
        kill();
        try {
          rmdirSync(folder);
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    },
  };
}

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** One line saying which limits apply to shell commands, for the worker's start. */
export function describeShellLimits(limits: ShellLimits, cgroup: CgroupBase | { reason: string }): string {
  const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
  const processes =
    'kind' in cgroup
      ? `${limits.processes} processes (pids cgroup ${cgroup.kind})`
      : `${limits.processes} processes (RLIMIT_NPROC in the sandbox, which does not bind root; no cgroup: ${cgroup.reason})`;
  const memory = 'kind' in cgroup && cgroup.memory ? `, ${mib(limits.memoryBytes)} memory in all (memory cgroup)` : '';
  return (
    `shell: each command is limited to ${limits.cpuSeconds} s of CPU, ${mib(limits.addressSpaceBytes)} of address space per process` +
    `${memory}, ${mib(limits.fileSizeBytes)} per file, ${processes}, ${limits.outputBytes} bytes of output`
  );
}
