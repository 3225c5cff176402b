(define (problem plan_trial_T20250104_000000_000004)
(:domain alfred)
(:objects
        agent1 - agent
        PotatoType - otype
        EggType - otype
        FridgeType - rtype
        MicrowaveType - rtype
        CounterTopType - rtype
        Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 - object
        Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 - object
        Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 - receptacle
        Microwave_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 - receptacle
        CounterTop_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 - receptacle
        loc_bar_1_bar__minus_3_bar_2_bar_45 - location
        loc_bar_2_bar__minus_4_bar_2_bar_45 - location
        loc_bar_3_bar__minus_5_bar_2_bar_45 - location
        loc_bar_0_bar_0_bar_0_bar_30 - location
        )
(:init
        (receptacleType Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 FridgeType)
        (receptacleType Microwave_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 MicrowaveType)
        (receptacleType CounterTop_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 CounterTopType)
        (objectType Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 PotatoType)
        (objectType Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 EggType)
        (canContain FridgeType PotatoType)
        (canContain FridgeType EggType)
        (canContain MicrowaveType PotatoType)
        (canContain MicrowaveType EggType)
        (canContain CounterTopType PotatoType)
        (canContain CounterTopType EggType)
        (pickupable Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (pickupable Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50)
        (openable Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (openable Microwave_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50)
        (heatable Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (heatable Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)
        (inReceptacle Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (inReceptacle Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (receptacleAtLocation Fridge_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (receptacleAtLocation Microwave_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 loc_bar_2_bar__minus_4_bar_2_bar_45)
        (receptacleAtLocation CounterTop_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        (objectAtLocation Potato_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (objectAtLocation Egg_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        )
(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (heatable ?o) (objectType ?o PotatoType) (receptacleType ?r CounterTopType) (isHot ?o) (inReceptacle ?o ?r))))))
)
