/**
 * An external agent's plan (`steps.ts`): the checklist the runtime writes, read back as steps.
 */

import { planSteps } from '../steps';

describe('planSteps', () => {
  it('reads done and open steps, in order', () => {
    const plan = '- [x] Read the notes\n- [ ] Edit (in progress)\n- [ ] Test';
    expect(planSteps(plan)).toEqual([
      { done: true, text: 'Read the notes' },
      { done: false, text: 'Edit (in progress)' },
      { done: false, text: 'Test' }
    ]);
  });

  it('leaves out lines that are not steps', () => {
    expect(planSteps('The plan:\n\n- [X] one\nplain - [ ] no')).toEqual([
      { done: true, text: 'one' }
    ]);
  });
});
