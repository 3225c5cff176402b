"""Writes the ALFWorld sample: four small trials in ALFWorld's published layout (json_2.1.1/<split>/<task>/<trial>/
with traj_data.json and initial_state.pddl), written here for skillgit's tests and demo (not ALFWorld's data).
The games are played with the PDDL domain and grammar the `alfworld` package ships. Run from this folder:
`python make_samples.py`."""

from __future__ import annotations

import json
from pathlib import Path

GOALS = {
    "pick_and_place_simple": "(inReceptacle ?o ?r) (objectType ?o {obj}Type) (receptacleType ?r {recep}Type)",
    "pick_clean_then_place_in_recep": "(cleanable ?o) (objectType ?o {obj}Type) (receptacleType ?r {recep}Type) "
                                      "(isClean ?o) (inReceptacle ?o ?r)",
    "pick_heat_then_place_in_recep": "(heatable ?o) (objectType ?o {obj}Type) (receptacleType ?r {recep}Type) "
                                     "(isHot ?o) (inReceptacle ?o ?r)",
}

# (split, folder, task type, target object, target receptacle, receptacles {name: openable},
#  objects {name: (receptacle, extra predicates)})
TRIALS = [
    ("train", "pick_and_place_simple-Pencil-None-Dresser-301", "pick_and_place_simple", "Pencil", "Dresser",
     {"SideTable": False, "Dresser": False, "Drawer": True}, {"Pencil": ("SideTable", []), "Book": ("Drawer", [])}),
    ("train", "pick_and_place_simple-Book-None-SideTable-302", "pick_and_place_simple", "Book", "SideTable",
     {"SideTable": False, "Drawer": True, "Bed": False}, {"Book": ("Drawer", []), "Pillow": ("Bed", [])}),
    ("train", "pick_clean_then_place_in_recep-Mug-None-Cabinet-10", "pick_clean_then_place_in_recep", "Mug",
     "Cabinet", {"CounterTop": False, "SinkBasin": False, "Cabinet": True},
     {"Mug": ("CounterTop", ["cleanable"]), "Apple": ("CounterTop", [])}),
    ("train", "pick_heat_then_place_in_recep-Potato-None-CounterTop-11", "pick_heat_then_place_in_recep", "Potato",
     "CounterTop", {"Fridge": True, "Microwave": True, "CounterTop": False},
     {"Potato": ("Fridge", ["heatable"]), "Egg": ("Fridge", ["heatable"])}),
]


def mangle(name: str, k: int) -> str:
    """An ALFRED object id (`Name|x|y|z`, mangled); a basin is `Sink|x|y|z|SinkBasin`, as in ALFRED's scenes."""
    where = f"_bar__plus_0{k}_dot_25_bar__plus_00_dot_90_bar__minus_0{k}_dot_50"
    return f"{name[:-5]}{where}_bar_{name}" if name.endswith("Basin") else f"{name}{where}"


def problem(trial: str, kind: str, obj: str, recep: str, receps: dict[str, bool],
            objects: dict[str, tuple[str, list[str]]]) -> str:
    r_ids = {name: mangle(name, k) for k, name in enumerate(receps, start=1)}
    o_ids = {name: mangle(name, k + 5) for k, name in enumerate(objects, start=1)}
    locs = {name: f"loc_bar_{k}_bar__minus_{k + 2}_bar_2_bar_45" for k, name in enumerate(receps, start=1)}
    start = "loc_bar_0_bar_0_bar_0_bar_30"
    decl = ["agent1 - agent"] + [f"{n}Type - otype" for n in objects] + [f"{n}Type - rtype" for n in receps]
    decl += [f"{i} - object" for i in o_ids.values()] + [f"{i} - receptacle" for i in r_ids.values()]
    decl += [f"{loc} - location" for loc in [*locs.values(), start]]
    init = [f"(receptacleType {r_ids[n]} {n}Type)" for n in receps]
    init += [f"(objectType {o_ids[n]} {n}Type)" for n in objects]
    init += [f"(canContain {r}Type {o}Type)" for r in receps for o in objects]
    init += [f"(pickupable {i})" for i in o_ids.values()]
    init += [f"(openable {r_ids[n]})" for n, openable in receps.items() if openable]
    init += [f"({pred} {o_ids[n]})" for n, (_, preds) in objects.items() for pred in preds]
    init += [f"(atLocation agent1 {start})"]
    init += [f"(inReceptacle {o_ids[n]} {r_ids[where]})" for n, (where, _) in objects.items()]
    init += [f"(receptacleAtLocation {r_ids[n]} {locs[n]})" for n in receps]
    init += [f"(objectAtLocation {o_ids[n]} {locs[where]})" for n, (where, _) in objects.items()]
    goal = GOALS[kind].format(obj=obj, recep=recep)
    return (f"(define (problem plan_{trial})\n(:domain alfred)\n(:objects\n        " + "\n        ".join(decl)
            + "\n        )\n(:init\n        " + "\n        ".join(init) + "\n        )\n"
            f"(:goal (and (exists (?r - receptacle) (exists (?o - object) (and {goal})))))\n)\n")


def main() -> None:
    root = Path(__file__).resolve().parent / "json_2.1.1"
    for number, (split, task, kind, obj, recep, receps, objects) in enumerate(TRIALS, start=1):
        trial = f"trial_T2025010{number}_000000_00000{number}"
        folder = root / split / task / trial
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "initial_state.pddl").write_text(problem(trial, kind, obj, recep, receps, objects))
        traj = {"task_id": trial, "task_type": kind, "scene": {"floor_plan": f"FloorPlan{300 + number}"},
                "pddl_params": {"object_target": obj, "parent_target": recep, "toggle_target": "",
                                "mrecep_target": "", "object_sliced": False},
                "turk_annotations": {"anns": [{"task_desc": f"Put the {obj.lower()} in the {recep.lower()}."}]}}
        (folder / "traj_data.json").write_text(json.dumps(traj, indent=1) + "\n")


if __name__ == "__main__":
    main()
