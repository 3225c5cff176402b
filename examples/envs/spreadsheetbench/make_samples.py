"""Writes this folder's SpreadsheetBench sample: `dataset.json` and `spreadsheet/<id>/<k>_<id>_{input,answer}.xlsx`
(three test cases per instruction, as the benchmark publishes them). Run it to regenerate them:

    python examples/envs/spreadsheetbench/make_samples.py [FOLDER]

Every file is byte-for-byte reproducible (fixed document dates and zip timestamps), so the committed workbooks are
exactly this script's output (tests/test_envs_spreadsheet.py checks it). Needs openpyxl.
"""

from __future__ import annotations

import datetime
import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable

import openpyxl

FIXED = datetime.datetime(2024, 6, 1)
Rows = list[list[Any]]

ORDERS = [  # three test cases: the same shape, other values (OJ-style: a solution must work on all of them)
    [["Widget", 4, 2.5], ["Gadget", 1, 10], ["Bolt", 12, 0.25], ["Nut", 30, 0.1], ["Spring", 3, 1.2]],
    [["Lamp", 2, 15], ["Cable", 7, 3.5], ["Plug", 5, 1.25], ["Switch", 1, 8], ["Fuse", 10, 0.5]],
    [["Pen", 10, 1.5], ["Ink", 3, 4.2], ["Paper", 2, 6], ["Clip", 100, 0.02], ["Stamp", 6, 0.85]],
]
REGIONS = [
    [["Ann", "North", 120], ["Bob", "South", 80], ["Cid", "North", 95], ["Dee", "East", 60], ["Eve", "West", 70]],
    [["Fay", "South", 50], ["Gus", "North", 140], ["Hal", "East", 75], ["Ivy", "North", 30], ["Jon", "North", 88]],
    [["Kim", "North", 10], ["Lou", "West", 20], ["Max", "South", 30], ["Ned", "West", 40], ["Oli", "East", 50]],
]
NAMES = [["ada lovelace", "alan turing", "grace hopper", "edsger dijkstra"],
         ["linus torvalds", "guido van rossum", "ken thompson", "dennis ritchie"],
         ["barbara liskov", "donald knuth", "john mccarthy", "frances allen"]]
AMOUNTS = [[19.99, 5, 42.5, 7.25], [100, 250.75, 3.3], [8, 8, 8, 8, 8, 8]]


def totals(case: int, answer: bool) -> dict[str, Rows]:
    rows: Rows = [["Product", "Quantity", "Price", "Total"]]
    for name, qty, price in ORDERS[case]:
        rows.append([name, qty, price, qty * price if answer else None])
    return {"Orders": rows}


def north(case: int, answer: bool) -> dict[str, Rows]:
    data = [["Rep", "Region", "Sales"], *REGIONS[case]]
    picked = [data[0], *(row for row in data[1:] if row[1] == "North")] if answer else []
    return {"Sales": data, "North": picked}


def upper(case: int, answer: bool) -> dict[str, Rows]:
    rows: Rows = [["Name", "Upper"]]
    rows += [[name, name.upper() if answer else None] for name in NAMES[case]]
    return {"People": rows}


def summary(case: int, answer: bool) -> dict[str, Rows]:
    amounts = AMOUNTS[case]
    result: Rows = [["Orders", len(amounts) if answer else None], ["Total", round(sum(amounts), 2) if answer else None]]
    return {"Amounts": [["Amount"], *[[a] for a in amounts]], "Summary": result}


ITEMS: list[tuple[dict[str, str], Callable[[int, bool], dict[str, Rows]]]] = [
    ({"id": "ss-totals", "instruction": "Fill column D (Total) of sheet Orders with Quantity times Price for every "
      "product row.", "instruction_type": "Cell-Level Manipulation", "answer_position": "'Orders'!D2:D6"}, totals),
    ({"id": "ss-north", "instruction": "Copy the header and every row of sheet Sales whose Region is North, in "
      "their original order, to sheet North starting at cell A1.", "instruction_type": "Sheet-Level Manipulation",
      "answer_position": "'North'!A1:C6"}, north),
    ({"id": "ss-upper", "instruction": "In column B of sheet People, write each name of column A in upper case.",
      "instruction_type": "Cell-Level Manipulation", "answer_position": "B2:B5"}, upper),
    ({"id": "ss-summary", "instruction": "On sheet Summary, put the number of amounts listed on sheet Amounts in B1 "
      "and their sum, rounded to 2 decimals, in B2.", "instruction_type": "Cell-Level Manipulation",
      "answer_position": "Summary!B1,Summary!B2"}, summary),
]


def workbook_bytes(sheets: dict[str, Rows]) -> bytes:
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for title, rows in sheets.items():
        ws = wb.create_sheet(title)
        for row in rows:
            ws.append(row)
    wb.properties.creator = "skillgit sample"
    wb.properties.created = wb.properties.modified = FIXED
    raw = io.BytesIO()
    wb.save(raw)
    return _fixed_zip(raw.getvalue())


def _fixed_zip(data: bytes) -> bytes:
    """The same zip with every entry's timestamp fixed (openpyxl stamps the current time)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            text = src.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl writes the save time as modified
                text = _fixed_core(text)
            entry = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(entry, text)
    return out.getvalue()


def _fixed_core(xml: bytes) -> bytes:
    import re

    stamp = FIXED.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    return re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(<)", rb"\g<1>" + stamp + rb"\g<2>", xml)


def write(folder: Path) -> list[Path]:
    """Write the sample into `folder`; returns the files written."""
    written = []
    dataset = []
    for meta, build in ITEMS:
        item_id = meta["id"]
        dataset.append({**meta, "spreadsheet_path": f"spreadsheet/{item_id}"})
        for case in range(3):
            for kind, answer in (("input", False), ("answer", True)):
                path = folder / "spreadsheet" / item_id / f"{case + 1}_{item_id}_{kind}.xlsx"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(workbook_bytes(build(case, answer)))
                written.append(path)
    dataset_file = folder / "dataset.json"
    dataset_file.write_text(json.dumps(dataset, indent=2) + "\n", encoding="utf-8")
    return [dataset_file, *written]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for file in write(target):
        print(file)
