"""Realistic short facts for benchmarks, generated deterministically from templates."""

from __future__ import annotations

import random

NAMES = ["Alice", "Bob", "Carmen", "Deepak", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
         "Kemi", "Luca", "Maya", "Nils", "Olga", "Pedro", "Quinn", "Rosa", "Sven", "Tara"]
TEMPLATES = [
    "{name} prefers {thing} over {other}",
    "{name} is allergic to {food}",
    "{name} visited {place} in {year} and loved the {thing2}",
    "{name} works as a {job} in {place}",
    "{name}'s favourite {category} is {thing}",
    "{name} wants to learn {skill} this {season}",
    "{name} has a {pet} named {petname}",
    "{name} moved to {place} with {relation} last {season}",
    "{name} runs {num} kilometres every {day}",
    "{name} dislikes {food} but enjoys {food2}",
    "Meeting with {name} about {project} is on {day}",
    "{name} is reading a book about {topic}",
]
WORDS = {
    "thing": ["tea", "coffee", "metric units", "dark mode", "window seats", "trains", "jazz",
              "sushi", "mountains", "paper books", "vinyl", "podcasts"],
    "other": ["imperial units", "light mode", "aisle seats", "planes", "pop music", "e-books"],
    "food": ["peanuts", "shellfish", "gluten", "cilantro", "mushrooms", "olives", "dairy"],
    "food2": ["ramen", "tacos", "paella", "curry", "dumplings", "falafel", "pizza"],
    "place": ["Lisbon", "Kyoto", "Nairobi", "Oslo", "Lima", "Hanoi", "Denver", "Porto", "Cairo",
              "Seoul", "Dublin", "Quito", "Tallinn", "Perth"],
    "year": [str(y) for y in range(2012, 2026)],
    "thing2": ["food", "museums", "beaches", "architecture", "people", "hiking trails"],
    "job": ["nurse", "teacher", "data engineer", "carpenter", "pilot", "chef", "lawyer",
            "pharmacist", "architect", "journalist"],
    "category": ["film", "band", "colour", "season", "board game", "painter", "city"],
    "skill": ["pottery", "Japanese", "salsa", "the cello", "sailing", "chess", "welding",
              "watercolour", "Python", "rock climbing"],
    "season": ["spring", "summer", "autumn", "winter", "year"],
    "pet": ["dog", "cat", "parrot", "rabbit", "guinea pig", "tortoise"],
    "petname": ["Biscuit", "Oscar", "Luna", "Pepper", "Milo", "Nala", "Rex", "Ziggy"],
    "relation": ["their partner", "two kids", "their sister", "a roommate", "their parents"],
    "num": ["3", "5", "8", "10", "12"],
    "day": ["morning", "Monday", "weekend", "Friday", "evening"],
    "project": ["the budget", "the garden redesign", "the wedding", "the product launch",
                "the school trip", "tax returns"],
    "topic": ["volcanoes", "medieval history", "bees", "quantum computing", "stoicism",
              "urban planning", "jazz history"],
}


def facts(count: int, seed: int = 7) -> list[str]:
    """``count`` distinct short facts."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        template = rng.choice(TEMPLATES)
        fields = {k: rng.choice(v) for k, v in WORDS.items()}
        fact = template.format(name=rng.choice(NAMES), **fields)
        if fact in seen:
            fact = f"{fact} (note {len(out)})"
        seen.add(fact)
        out.append(fact)
    return out


QUERIES = [
    "what drinks do I like?", "any food allergies I should know about?", "where did I travel?",
    "what is my job?", "do I have pets?", "what am I learning?", "when is the meeting?",
    "which units do I prefer?", "what books am I reading?", "how often do I exercise?",
]
