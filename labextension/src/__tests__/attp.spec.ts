/**
 * The ATTP reader (`attp.ts`): what a step, an answer, a reply still streaming in and text
 * that is not ATTP read as.
 */

import { looksLikeAttp, parseAttp } from '../attp';

const STEP = `thought = "Look the weather up."

[tool_call]
status = "ok"
target = "weather"
code = '''
print(weather("Paris"))
'''
`;

describe('parseAttp', () => {
  it('reads a step: its thought, and the tool call with its target and code', () => {
    const step = parseAttp(STEP);
    expect(step).not.toBeNull();
    expect(step!.thought).toBe('Look the weather up.');
    expect(step!.toolCall).toEqual({
      status: 'ok',
      target: 'weather',
      code: 'print(weather("Paris"))\n',
      message: ''
    });
    expect(step!.answer).toBeNull();
    expect(step!.complete).toBe(true);
  });

  it('reads an answer, with escapes in a basic string', () => {
    const answer = parseAttp(
      'thought = "Done."\nanswer = "Line one.\\nLine \\"two\\"."\n'
    );
    expect(answer!.answer).toBe('Line one.\nLine "two".');
    expect(answer!.toolCall).toBeNull();
  });

  it('keeps the prose a model wrote around a fenced TOML block', () => {
    const reply = parseAttp(
      'Here is my step.\n\n```toml\nthought = "Think."\nanswer = "Yes."\n```\n'
    );
    expect(reply!.prose).toBe('Here is my step.');
    expect(reply!.answer).toBe('Yes.');
  });

  it('reads a reply still streaming in up to where it stops, marked incomplete', () => {
    const partial = parseAttp(
      'thought = "Look it up."\nanswer = """The weather in Par',
      true
    );
    expect(partial!.complete).toBe(false);
    expect(partial!.answer).toBe('The weather in Par');
    // the same text, finished: a string left open is not valid TOML
    expect(
      parseAttp('thought = "Look it up."\nanswer = """The weather in Par')
    ).toBeNull();
  });

  it('gives null for text that is not ATTP, and for TOML it cannot read', () => {
    expect(parseAttp('Just a plain reply in **Markdown**.')).toBeNull();
    expect(parseAttp('thought = "x"\nanswer = "a" trailing\n')).toBeNull();
  });
});

describe('looksLikeAttp', () => {
  it('tells a reply that starts as ATTP from prose', () => {
    expect(looksLikeAttp('thought = "x"')).toBe(true);
    expect(looksLikeAttp('  [tool_call]\nstatus = "ok"')).toBe(true);
    expect(looksLikeAttp('```toml\nthought = "x"\n```')).toBe(true);
    expect(looksLikeAttp('I think the answer is 4.')).toBe(false);
  });
});
