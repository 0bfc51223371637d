/**
 * The agents a message file defines, as the bar's menu lists them (`agents.ts`), and a
 * cell's history mode as the runtime reads it.
 */

import {
  fileAgents,
  frontMatterAgents,
  historyMode,
  ICellView
} from '../agents';

function raw(source: string): ICellView {
  return { type: 'raw', source, metadata: {} };
}

function message(metadata: { [key: string]: unknown } = {}): ICellView {
  return { type: 'code', source: 'Hello.', metadata };
}

describe('frontMatterAgents', () => {
  it('lists presets of a block mapping and the default_agent', () => {
    const yaml =
      'agents:\n  writer:\n    models: [m]\n  helper:\n    tools: ["*"]\ndefault_agent: helper';
    expect(frontMatterAgents(yaml)).toEqual({
      names: ['writer', 'helper'],
      defaultAgent: 'helper',
      history: 'include'
    });
  });

  it('lists a block list of names, and defaults to the first without default_agent', () => {
    const yaml =
      'agents:\n  - name: "critic"\n    models: [m]\n  - name: scout\n';
    expect(frontMatterAgents(yaml)).toEqual({
      names: ['critic', 'scout'],
      defaultAgent: 'critic',
      history: 'include'
    });
  });

  it('lists the keys of a one-line flow mapping', () => {
    expect(
      frontMatterAgents('agents: {a: {models: [x]}, b: {}}').names
    ).toEqual(['a', 'b']);
  });
});

describe('fileAgents', () => {
  it('takes the front matter of the first raw cell, then agent definition cells', () => {
    const cells = [
      raw('---\nagents:\n  writer:\n    models: [m]\n---'),
      message(),
      message({ definition: 'agent', name: 'critic' }),
      message({ definition: 'agent', name: 'writer' })
    ];
    expect(fileAgents(cells)).toEqual({
      names: ['writer', 'critic'],
      defaultAgent: 'writer',
      history: 'include'
    });
  });

  it('reads no front matter from a raw cell that is not the first', () => {
    const cells = [message(), raw('---\nagents:\n  writer: {}\n---')];
    expect(fileAgents(cells)).toEqual({
      names: [],
      defaultAgent: null,
      history: 'include'
    });
  });
});

describe('historyMode', () => {
  it.each([
    [undefined, 'include'],
    ['', 'include'],
    [true, 'include'],
    [false, 'exclude'],
    ['Exclude', 'exclude'],
    ['no', 'exclude'],
    ['summary', 'summary'],
    ['anything else', 'include']
  ])('reads %p as %p', (value, mode) => {
    expect(historyMode(value)).toBe(mode);
  });
});

describe('history: auto in the front matter', () => {
  it('makes auto the mode of cells that set none', () => {
    expect(
      frontMatterAgents('history: auto\nagents:\n  a: {}').history
    ).toEqual('auto');
  });
});
