"""The review screen's text: the kind's label, the answer side as Markdown, the demo line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from prep.engine.study.present import DemoLink, Section

KIND_LABELS = {
    "recall": "recall",
    "choice": "multiple choice",
    "red-flag": "red flag: which answer signals junior thinking?",
    "follow-up": "follow-up",
}


def back_markdown(sections: list[Section]) -> str:
    """The answer side as Markdown; the demos section is left to the demo link below it."""
    parts = []
    for section in sections:
        if section.key == "answer":
            parts.append(section.text)
        elif section.key == "correct":
            parts.append(f"**{section.label}: {section.text}**")
        elif section.key == "bullets":
            parts.append(f"**{section.label}:**\n\n" + "\n".join(f"- {b}" for b in section.items))
        elif section.key == "sources":
            parts.append(f"*{section.label}:* " + "; ".join(section.items))
        elif section.key != "demos":  # why, analogy
            parts.append(f"**{section.label}.** {section.text}")
    return "\n\n".join(parts)


def demo_line(links: tuple[DemoLink, ...]) -> Text:
    """`r  run the demo NAME`, its latest run and its claim; with several demos, their names
    (r asks which one)."""
    if len(links) > 1:
        line = Text.assemble(("r", "bold reverse"), f"  run one of {len(links)} demos: ")
        line.append(", ".join(link.name for link in links), style="bold")
        return line
    first = links[0]
    line = Text.assemble(("r", "bold reverse"), "  run the demo ", (first.name, "bold"))
    line.append(f"  ({first.last_run()})", style="dim")
    if first.claim:
        line.append(f"\n{first.claim}", style="dim")
    return line
