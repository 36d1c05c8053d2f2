// Large live tables render only the rows in view; the count, sorting and filtering
// cover every row, a selected row is kept in the URL (a link to it opens the table
// scrolled there), and the keyboard moves through all of them.
import { test, expect } from './fixtures';
import { Kube, at, ats } from './kube';

test('a large table renders a window of rows, and sorting, filtering, selection and the keyboard cover all of them', async ({
  page,
}) => {
  test.setTimeout(120_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('window');
  const total = 400;
  const names = Array.from({ length: total }, (_, i) => `at-${String(i).padStart(3, '0')}`);
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(names.slice(i, i + 20).map((n) => kube.ok('POST', ats(ns), at(n, `echo ${n}`))));
  }
  const list = `/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`;
  await page.goto(list);
  await expect(page.getByTestId('live-status')).toHaveText('Live');
  await expect(page.getByTestId('row-count')).toHaveText(`${total} objects`);
  const rows = page.locator('[data-testid="live-table"] tr.row');
  expect(await rows.count(), 'only a window of rows is in the page').toBeLessThan(60);
  await expect(rows.first()).toHaveAttribute('data-name', 'at-000');

  // Scrolled to the end, the last rows are there.
  const grid = page.getByRole('grid');
  await grid.evaluate((el) => (el.scrollTop = el.scrollHeight));
  await expect(page.locator('tr[data-name="at-399"]')).toBeVisible();

  // Sorting covers every row, not only the rendered ones.
  await page.locator('th[data-column="Name"]').click();
  await page.locator('th[data-column="Name"]').click();
  await grid.evaluate((el) => (el.scrollTop = 0));
  await expect(rows.first()).toHaveAttribute('data-name', 'at-399');

  // So does filtering.
  await page.getByPlaceholder('Filter rows').fill('at-12');
  await expect(page.getByTestId('row-count')).toHaveText(`10 of ${total} objects`);
  await page.getByPlaceholder('Filter rows').fill('');
  await page.locator('th[data-column="Name"]').click(); // back to unsorted
  await expect(rows.first()).toHaveAttribute('data-name', 'at-000');
  await expect(page.getByTestId('row-count')).toHaveText(`${total} objects`);

  // The keyboard: Home selects the first row, arrows move, End goes to the last row
  // (rendered and selected though it was far out of view). The URL keeps it.
  await grid.focus();
  await page.keyboard.press('Home');
  await expect(page.locator('tr.selected')).toHaveAttribute('data-name', 'at-000');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await expect(page.locator('tr.selected')).toHaveAttribute('data-name', 'at-002');
  await page.keyboard.press('End');
  await expect(page.locator('tr.selected')).toHaveAttribute('data-name', 'at-399');
  await expect(page.locator('tr.selected')).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`row=${ns}%2Fat-399`));
  await page.keyboard.press('PageUp');
  await expect(page.locator('tr.selected')).toBeVisible();

  // A deep link to a row far down opens the table scrolled to it, selected.
  await page.goto(`${list}&row=${ns}/at-350`);
  await expect(page.locator('tr[data-name="at-350"]')).toBeVisible();
  await expect(page.locator('tr[data-name="at-350"]')).toHaveClass(/selected/);
  await page.screenshot({ path: 'test-results/window.png' });

  // Enter opens the selected row's page.
  await page.getByRole('grid').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('object-name')).toHaveText('at-350');
});
