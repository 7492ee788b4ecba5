// Which process of a member is which, and what the member holds in all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyProcesses, sampleTotals, summarizeMember, summarizeSystem } from './pod-memory.mjs';

const MiB = 2 ** 20;

// A Kanri member as /proc shows it: the keeper (the PID the fixture starts), the agent it runs,
// the postmaster it runs for the agent, two backends and an archive command in flight.
const KANRI = [
  { pid: 100, ppid: 1, comm: 'node' },
  { pid: 101, ppid: 100, comm: 'node' },
  { pid: 102, ppid: 100, comm: 'postgres' },
  { pid: 103, ppid: 102, comm: 'postgres' },
  { pid: 104, ppid: 102, comm: 'postgres' },
  { pid: 105, ppid: 103, comm: 'sh' },
  { pid: 106, ppid: 105, comm: 'node' },
];
// A Patroni member: postgres in a session of its own, its parent gone (reparented to 1).
const PATRONI = [
  { pid: 200, ppid: 1, comm: 'patroni' },
  { pid: 300, ppid: 1, comm: 'postgres' },
  { pid: 301, ppid: 300, comm: 'postgres' },
];

describe("a member's processes", () => {
  it("tells Kanri's keeper from the agent it runs (the PID the fixture starts is the keeper's)", () => {
    const roles = classifyProcesses(KANRI, { root: 100, postmaster: 102, rootRole: 'keeper', childRole: 'agent' });
    assert.deepEqual(
      roles.map((p) => `${p.pid} ${p.role}`),
      ['100 keeper', '101 agent', '102 postmaster', '103 backend', '104 backend', '105 helper', '106 helper'],
    );
  });

  it("finds Patroni's postgres outside Patroni's tree, and no agent", () => {
    const roles = classifyProcesses(PATRONI, { root: 200, postmaster: 300, rootRole: 'patroni' });
    assert.deepEqual(
      roles.map((p) => `${p.pid} ${p.role}`),
      ['200 patroni', '300 postmaster', '301 backend'],
    );
  });

  it('sums each role and the member; the HA side is the keeper and the agent', () => {
    const mem = { 100: 40, 101: 70, 102: 30, 103: 10, 104: 10, 105: 1, 106: 45 };
    const processes = classifyProcesses(KANRI, {
      root: 100,
      postmaster: 102,
      rootRole: 'keeper',
      childRole: 'agent',
    }).map(({ pid, role }) => ({ pid, role, rss: mem[pid] * MiB, pss: (mem[pid] / 2) * MiB, private: MiB }));
    const totals = sampleTotals(processes);
    assert.deepEqual(totals.roles.agent, { count: 1, rss: 70 * MiB, pss: 35 * MiB, private: MiB });
    assert.deepEqual(totals.roles.backend, { count: 2, rss: 20 * MiB, pss: 10 * MiB, private: 2 * MiB });
    assert.deepEqual(totals.ha, { count: 2, rss: 110 * MiB, pss: 55 * MiB, private: 2 * MiB });
    assert.deepEqual(totals.pod, { count: 7, rss: 206 * MiB, pss: 103 * MiB, private: 7 * MiB });
  });

  it('takes medians over the samples; a helper seen once has a median of 0 and a peak', () => {
    const sample = (helper) =>
      sampleTotals([
        { pid: 1, role: 'keeper', rss: 40 * MiB, pss: 20 * MiB, private: 5 * MiB },
        { pid: 2, role: 'agent', rss: 70 * MiB, pss: 50 * MiB, private: 25 * MiB },
        ...(helper ? [{ pid: 3, role: 'helper', rss: 45 * MiB, pss: 30 * MiB, private: 10 * MiB }] : []),
      ]);
    const member = summarizeMember([sample(false), sample(true), sample(false)]);
    assert.deepEqual(member.roles.agent, { count: 1, rssMiB: 70, pssMiB: 50, privateMiB: 25, peakPssMiB: 50 });
    assert.deepEqual(member.roles.helper, { count: 0, rssMiB: 0, pssMiB: 0, privateMiB: 0, peakPssMiB: 30 });
    assert.deepEqual(member.pod, { count: 2, rssMiB: 110, pssMiB: 70, privateMiB: 30, peakPssMiB: 100 });
    assert.deepEqual(member.ha, { count: 2, rssMiB: 110, pssMiB: 70, privateMiB: 30 });
    const system = summarizeSystem([member, member, member]);
    assert.deepEqual(system.pod, { rssMiB: 110, pssMiB: 70, privateMiB: 30 });
    assert.deepEqual(system.roles.keeper, { rssMiB: 40, pssMiB: 20, privateMiB: 5 });
  });
});
