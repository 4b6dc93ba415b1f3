"""tests/notebook_util.outputs_text: a print split over two stream outputs reads as printed."""

from __future__ import annotations

import nbformat

from tests.notebook_util import outputs_text


def test_pieces_of_one_stream_join_as_printed_and_other_outputs_stay_apart():
    v4 = nbformat.v4
    cell = v4.new_code_cell("print('done', True)")
    cell.outputs = [v4.new_output("stream", name="stdout", text="done"),
                    v4.new_output("stream", name="stdout", text=" True\n"),
                    v4.new_output("stream", name="stderr", text="warning\n"),
                    v4.new_output("display_data", data={"text/plain": "a table"}),
                    v4.new_output("stream", name="stdout", text="after\n")]
    other = v4.new_code_cell("print('next')")
    other.outputs = [v4.new_output("stream", name="stdout", text="next\n")]
    text = outputs_text(v4.new_notebook(cells=[cell, other]))
    assert [line for line in text.splitlines() if line] == ["done True", "warning", "a table",
                                                            "after", "next"]
