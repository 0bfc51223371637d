/**
 * What replies cost: a reply's tokens, cost and duration from its metadata, a message
 * notebook's running total, and the status-bar item that shows it.
 */

import { ICodeCellModel } from '@jupyterlab/cells';
import { INotebookModel } from '@jupyterlab/notebook';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import { trans } from './translation';

export interface IUsage {
  tokensIn: number | null;
  tokensOut: number | null;
  /** In US dollars, from litellm's cost map; `null` when unknown. */
  cost: number | null;
  /** Seconds. */
  duration: number | null;
}

function num(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) {
    return value;
  }
  if (typeof value === 'string') {
    // `duration=0.5s` is written as a bare word, read back as a string.
    const match = /^\s*(\d+(?:\.\d+)?)\s*s?\s*$/.exec(value);
    return match ? Number(match[1]) : null;
  }
  return null;
}

/** The usage a reply's attributes record (`tokens_in`, `tokens_out`, `cost`, `duration`). */
export function usageOf(attrs: ReadonlyPartialJSONObject): IUsage {
  return {
    tokensIn: num(attrs['tokens_in']),
    tokensOut: num(attrs['tokens_out']),
    cost: num(attrs['cost']),
    duration: num(attrs['duration'])
  };
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** A cost in dollars, to two significant digits below a cent. */
export function formatCost(cost: number): string {
  return `$${cost >= 0.01 ? cost.toFixed(2) : Number(cost.toPrecision(2)).toString()}`;
}

/** `120 → 45 tokens · $0.0003`: the parts that are known, or `''`. */
export function formatUsage(usage: IUsage): string {
  const parts: string[] = [];
  if (usage.tokensIn !== null || usage.tokensOut !== null) {
    const sent = count(usage.tokensIn ?? 0);
    parts.push(trans().__('%1 → %2 tokens', sent, count(usage.tokensOut ?? 0)));
  }
  if (usage.cost !== null) {
    parts.push(formatCost(usage.cost));
  }
  return parts.join(' · ');
}

export interface ITotal {
  tokensIn: number;
  tokensOut: number;
  /** The sum of the known costs, and whether some reply's cost was unknown. */
  cost: number;
  costUnknown: boolean;
  replies: number;
}

/** The sum over every reply (and step) of a notebook. */
export function notebookTotal(model: INotebookModel): ITotal {
  const total: ITotal = {
    tokensIn: 0,
    tokensOut: 0,
    cost: 0,
    costUnknown: false,
    replies: 0
  };
  for (const cell of model.cells) {
    if (cell.type !== 'code') {
      continue;
    }
    const outputs = (cell as ICodeCellModel).outputs;
    for (let i = 0; i < outputs.length; i++) {
      const metadata = outputs.get(i).metadata;
      const ns = metadata['percent_agent'] as
        ReadonlyPartialJSONObject | undefined;
      if (
        !ns ||
        typeof ns !== 'object' ||
        ns['type'] === 'tool' ||
        !ns['type']
      ) {
        continue;
      }
      const usage = usageOf(metadata);
      if (
        usage.tokensIn === null &&
        usage.tokensOut === null &&
        usage.cost === null
      ) {
        continue; // a reply still streaming, or one written by hand
      }
      total.replies += 1;
      total.tokensIn += usage.tokensIn ?? 0;
      total.tokensOut += usage.tokensOut ?? 0;
      if (usage.cost === null) {
        total.costUnknown = true;
      } else {
        total.cost += usage.cost;
      }
    }
  }
  return total;
}

/** The words of a total, as the status bar shows them. */
export function formatTotal(total: ITotal): string {
  const t = trans();
  if (!total.replies) {
    return t.__('Agent: no usage yet');
  }
  const tokens = t.__(
    '%1 → %2 tokens',
    count(total.tokensIn),
    count(total.tokensOut)
  );
  const cost =
    total.cost || !total.costUnknown ? ` · ${formatCost(total.cost)}` : '';
  const partial = total.costUnknown && total.cost ? '+' : '';
  return t.__('Agent: %1', `${tokens}${cost}${partial}`);
}

/** The status-bar item: the running total of the message notebook in view. */
export class UsageStatus extends Widget {
  private _model: INotebookModel | null = null;
  private _timer = 0;

  constructor() {
    super();
    this.addClass('jp-PercentAgent-usageStatus');
    this.addClass('jp-StatusBar-TextItem');
  }

  /** The notebook whose total is shown, if any. */
  get model(): INotebookModel | null {
    return this._model;
  }

  /** Follow `model` (or nothing). */
  set model(model: INotebookModel | null) {
    if (model === this._model) {
      return;
    }
    this._model?.contentChanged.disconnect(this._schedule, this);
    this._model = model;
    model?.contentChanged.connect(this._schedule, this);
    this._update();
  }

  private _schedule(): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => this._update(), 250);
  }

  private _update(): void {
    if (this._model === null || this._model.isDisposed) {
      this.node.textContent = '';
      return;
    }
    const total = notebookTotal(this._model);
    this.node.textContent = formatTotal(total);
    const t = trans();
    this.node.title = total.replies
      ? total.costUnknown
        ? t.__(
            '%1 replies and steps in this conversation: tokens sent → received; the cost of some is unknown',
            total.replies
          )
        : t.__(
            '%1 replies and steps in this conversation: tokens sent → received',
            total.replies
          )
      : t.__('No reply in this conversation has recorded its usage yet');
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    this.model = null;
    super.dispose();
  }
}
