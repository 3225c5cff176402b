(define (problem plan_trial_T20250103_000000_000003)
(:domain alfred)
(:objects
        agent1 - agent
        MugType - otype
        AppleType - otype
        CounterTopType - rtype
        SinkBasinType - rtype
        CabinetType - rtype
        Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 - object
        Apple_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 - object
        CounterTop_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 - receptacle
        Sink_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50_bar_SinkBasin - receptacle
        Cabinet_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 - receptacle
        loc_bar_1_bar__minus_3_bar_2_bar_45 - location
        loc_bar_2_bar__minus_4_bar_2_bar_45 - location
        loc_bar_3_bar__minus_5_bar_2_bar_45 - location
        loc_bar_0_bar_0_bar_0_bar_30 - location
        )
(:init
        (receptacleType CounterTop_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 CounterTopType)
        (receptacleType Sink_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50_bar_SinkBasin SinkBasinType)
        (receptacleType Cabinet_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 CabinetType)
        (objectType Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 MugType)
        (objectType Apple_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 AppleType)
        (canContain CounterTopType MugType)
        (canContain CounterTopType AppleType)
        (canContain SinkBasinType MugType)
        (canContain SinkBasinType AppleType)
        (canContain CabinetType MugType)
        (canContain CabinetType AppleType)
        (pickupable Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (pickupable Apple_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50)
        (openable Cabinet_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50)
        (cleanable Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)
        (inReceptacle Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 CounterTop_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (inReceptacle Apple_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 CounterTop_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (receptacleAtLocation CounterTop_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (receptacleAtLocation Sink_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50_bar_SinkBasin loc_bar_2_bar__minus_4_bar_2_bar_45)
        (receptacleAtLocation Cabinet_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        (objectAtLocation Mug_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (objectAtLocation Apple_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        )
(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (cleanable ?o) (objectType ?o MugType) (receptacleType ?r CabinetType) (isClean ?o) (inReceptacle ?o ?r))))))
)
