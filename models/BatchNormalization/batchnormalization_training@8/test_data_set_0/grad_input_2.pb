B	grad_biasJ MÞÞ?»Ànm*WI
Àª	¡½ÊPø¿