/**
 * What the agent kernel tells of a run reaches that run only (`runledger.ts`): the nonce a
 * run's live state went with names it; another cell, another run of the same cell, or a
 * nonce the notebook never sent gets nothing.
 */

import { RunLedger } from '../runledger';

const a = { id: 'a' };
const b = { id: 'b' };

describe('RunLedger', () => {
  it('gives what was told of a run to that run when it ends', () => {
    const ledger = new RunLedger<object>();
    ledger.scheduled(a, 'n-a');
    ledger.told({ nonce: 'n-a', proposed: { after: 'a' } });
    expect(ledger.ended(a)).toEqual({ proposed: { after: 'a' } });
    expect(ledger.ended(a)).toBeUndefined();
  });

  it('never gives what was told of one cell to the run of another', () => {
    const ledger = new RunLedger<object>();
    ledger.scheduled(a, 'n-a');
    ledger.scheduled(b, 'n-b');
    ledger.told({ nonce: 'n-a', untrusted_folder: { folder: '/x' } });
    expect(ledger.ended(b)).toBeUndefined();
    expect(ledger.ended(a)).toEqual({ untrusted_folder: { folder: '/x' } });
  });

  it('keeps two runs of one cell apart, in the order they were scheduled', () => {
    const ledger = new RunLedger<object>();
    ledger.scheduled(a, 'first');
    ledger.scheduled(a, 'second');
    ledger.told({ nonce: 'second', proposed: 2 });
    expect(ledger.ended(a)).toBeUndefined();
    expect(ledger.ended(a)).toEqual({ proposed: 2 });
  });

  it('drops what names a nonce it never sent, or no nonce at all', () => {
    const ledger = new RunLedger<object>();
    ledger.scheduled(a, 'n-a');
    ledger.told({ nonce: 'forged', proposed: 1 });
    ledger.told({ proposed: 1 });
    ledger.told('n-a');
    expect(ledger.ended(a)).toBeUndefined();
  });

  it('forgets the runs a restart ended', () => {
    const ledger = new RunLedger<object>();
    ledger.scheduled(a, 'n-a');
    ledger.clear();
    ledger.told({ nonce: 'n-a', proposed: 1 });
    ledger.scheduled(a, 'n-a2');
    expect(ledger.ended(a)).toBeUndefined();
  });
});
