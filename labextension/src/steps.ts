/**
 * What an external (ACP) agent sends besides its answer, as a message notebook shows it: its
 * plan as a checklist (a reply with `plan=true`, whose text is `- [x] step` lines) and its
 * thoughts folded (`thought=true`). Every text goes in as text.
 */

import { el } from './dom';

export interface IPlanStep {
  done: boolean;
  text: string;
}

const CHECK_LINE = /^\s*[-*] \[( |x|X)\] ?(.*)$/;

/** The steps of a Markdown checklist; any other line is left out. */
export function planSteps(source: string): IPlanStep[] {
  const steps: IPlanStep[] = [];
  for (const line of source.split('\n')) {
    const match = CHECK_LINE.exec(line);
    if (match) {
      steps.push({ done: match[1] !== ' ', text: match[2] });
    }
  }
  return steps;
}

/** The plan as a list of ticked (done) and empty boxes, none of which the user can tick. */
export function renderPlan(source: string): HTMLElement {
  const list = el('ul', 'jp-PercentAgent-plan');
  for (const step of planSteps(source)) {
    const item = el('li', step.done ? 'jp-mod-done' : '');
    const box = el('input', '');
    box.type = 'checkbox';
    box.checked = step.done;
    box.disabled = true;
    item.append(box, el('span', '', step.text));
    list.appendChild(item);
  }
  return list;
}
