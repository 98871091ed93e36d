/** Narrowest a chart is drawn, whatever its box. */
const MIN_WIDTH = 320;

/**
 * The width a chart may draw in: its box's content width. `clientWidth`
 * counts the padding too, and a chart drawn that wide (its legend with it)
 * ran past the right edge of its card.
 */
export function chartWidth(element: HTMLElement): number {
  const style = getComputedStyle(element);
  const padding = Number.parseFloat(style.paddingLeft) + Number.parseFloat(style.paddingRight);
  return Math.max(MIN_WIDTH, Math.floor(element.clientWidth - (Number.isFinite(padding) ? padding : 0)));
}
