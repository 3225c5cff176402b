(define (problem plan_trial_T20250101_000000_000001)
(:domain alfred)
(:objects
        agent1 - agent
        PencilType - otype
        BookType - otype
        SideTableType - rtype
        DresserType - rtype
        DrawerType - rtype
        Pencil_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 - object
        Book_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 - object
        SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 - receptacle
        Dresser_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 - receptacle
        Drawer_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 - receptacle
        loc_bar_1_bar__minus_3_bar_2_bar_45 - location
        loc_bar_2_bar__minus_4_bar_2_bar_45 - location
        loc_bar_3_bar__minus_5_bar_2_bar_45 - location
        loc_bar_0_bar_0_bar_0_bar_30 - location
        )
(:init
        (receptacleType SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 SideTableType)
        (receptacleType Dresser_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 DresserType)
        (receptacleType Drawer_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 DrawerType)
        (objectType Pencil_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 PencilType)
        (objectType Book_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 BookType)
        (canContain SideTableType PencilType)
        (canContain SideTableType BookType)
        (canContain DresserType PencilType)
        (canContain DresserType BookType)
        (canContain DrawerType PencilType)
        (canContain DrawerType BookType)
        (pickupable Pencil_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50)
        (pickupable Book_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50)
        (openable Drawer_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)
        (inReceptacle Pencil_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50)
        (inReceptacle Book_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 Drawer_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50)
        (receptacleAtLocation SideTable_bar__plus_01_dot_25_bar__plus_00_dot_90_bar__minus_01_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (receptacleAtLocation Dresser_bar__plus_02_dot_25_bar__plus_00_dot_90_bar__minus_02_dot_50 loc_bar_2_bar__minus_4_bar_2_bar_45)
        (receptacleAtLocation Drawer_bar__plus_03_dot_25_bar__plus_00_dot_90_bar__minus_03_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        (objectAtLocation Pencil_bar__plus_06_dot_25_bar__plus_00_dot_90_bar__minus_06_dot_50 loc_bar_1_bar__minus_3_bar_2_bar_45)
        (objectAtLocation Book_bar__plus_07_dot_25_bar__plus_00_dot_90_bar__minus_07_dot_50 loc_bar_3_bar__minus_5_bar_2_bar_45)
        )
(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) (objectType ?o PencilType) (receptacleType ?r DresserType))))))
)
