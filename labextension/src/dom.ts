/**
 * Building DOM nodes: text goes in as text, never as HTML.
 */

/** A new `name` element with `className`, holding `text` when given. */
export function el<K extends keyof HTMLElementTagNameMap>(
  name: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(name);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
