"""Off-topic probes: inputs unrelated to any personal memory, added to every partition.

Whatever recall returns for them is noise, so the bytes it spends on them measure what the
relevance floor is for. Written for semmem (general knowledge, coding, chit-chat), drawn
from no dataset.
"""

from __future__ import annotations

OFF_TOPIC: tuple[str, ...] = (
    "What's the weather forecast for Tokyo tomorrow?",
    "How do I reverse a linked list in Python?",
    'Translate "good morning" into Spanish.',
    "What is the boiling point of water at high altitude?",
    "Summarise the plot of Hamlet in three sentences.",
    "Convert 50 miles to kilometres.",
    "What is the time complexity of quicksort?",
    "Fix this SQL: SELECT name FROM users WHERE id = ;",
    "How many moons does Jupiter have?",
    "Explain how the TCP three-way handshake works.",
    "What's 17 times 23?",
    "Recommend a laptop for programming under $1000.",
    "What's the difference between a virus and a bacterium?",
    "Write a regular expression that matches an IPv4 address.",
    "Who wrote The Brothers Karamazov?",
    "How does compound interest work?",
    "What is the capital of Australia?",
    "Give me a recipe for sourdough bread.",
    "Why is the sky blue?",
    "List the planets of the solar system in order.",
    "How do I configure nginx as a reverse proxy?",
    "What does HTTP status 418 mean?",
    "Explain the difference between TCP and UDP.",
    "How tall is Mount Everest?",
    "thanks!",
    "ok",
    "hi there",
    "Can you proofread this paragraph for me?",
    "What year did the Berlin Wall fall?",
    "How do vaccines train the immune system?",
)
