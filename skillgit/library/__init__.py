"""Skill libraries: many skills in one repository, and whether each one fires (the activation track).

- `model.py`: the library (skill folders with `name` / `description` front matter), listings, trigger cases.
- `activation.py`: routers (the simulated overlap router; the real path reads the skills an agent loaded from its
  trace) and precision / recall / F1 per skill.
- `track.py`: the activation track's judge (listing-only edit, listing budget, the gate, interference) and loop.
- `teacher.py`: the simulated description teacher. `demo.py`: `skillgit demo --library`.
"""
