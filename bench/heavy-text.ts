/** Mixed prose of `chars` characters for the pool's benches: sentences with numbers, dates, and an email or a phone number every few lines (so PII screening finds things). */
export function heavyText(chars: number, seed = 1): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const n = (i * 7919 + seed * 104_729) % 100_000;
    const line =
      i % 5 === 0
        ? `Ticket ${n} was opened by user${n}@example.com on 2026-12-0${(i % 9) + 1}; call +1 415 555 ${String(1000 + (n % 9000))} if the refund is late.`
        : `Build ${n}.${i % 10} of the gateway passed ${i % 50} checks, and the operations team will review the billing page before release ${i % 7}.`;
    parts.push(line);
    length += line.length + 1;
  }
  return parts.join("\n").slice(0, chars);
}
